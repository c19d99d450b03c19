// The HTTP side of realtime: `POST /broadcasting/auth` (what it signs, for whom, with what) and the
// WebSocket upgrade of `/app/{key}` (its origin check, its answer to an unknown key).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { broadcastingAuth, member, sign, startDeployment, upgrade } from './harness.mjs';

const SOCKET = '123456.654321';

describe('POST /broadcasting/auth', () => {
    let d;
    let ada;
    let bob;
    let reader;
    before(async () => {
        d = await startDeployment();
        ada = await d.signedInUser({ name: 'Ada' });
        bob = await d.signedInUser({ name: 'Bob' });
        reader = await d.signedInUser({ role: 'reader', name: 'Reader' });
    });
    after(() => d?.stop());

    test('signs the private channel of the signed-in user with the configured key and secret (JSON body)', async () => {
        const channel = `private-App.Models.User.${ada.id}`;
        const res = await broadcastingAuth(d.server, ada.cookie, SOCKET, channel);
        assert.deepEqual(res, { status: 200, body: { auth: sign(d.key, d.secret, SOCKET, channel) } });
    });

    test('takes the form body pusher-js sends by default, and signs the same', async () => {
        const channel = `private-App.Models.User.${ada.id}`;
        const res = await broadcastingAuth(d.server, ada.cookie, SOCKET, channel, { form: true });
        assert.deepEqual(res, { status: 200, body: { auth: sign(d.key, d.secret, SOCKET, channel) } });
    });

    test('signs a presence channel with the member as channel_data, covered by the signature', async () => {
        const channel = `presence-chat.${await d.freshChat()}`;
        const res = await broadcastingAuth(d.server, ada.cookie, SOCKET, channel);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.deepEqual(Object.keys(res.body).sort(), ['auth', 'channel_data']);
        assert.equal(typeof res.body.channel_data, 'string', 'channel_data is a JSON string (protocol 7)');
        const data = JSON.parse(res.body.channel_data);
        // The protocol allows a string or a number as user_id; the member is the account.
        assert.equal(String(data.user_id), String(ada.id), res.body.channel_data);
        assert.deepEqual(data.user_info, member(ada));
        assert.deepEqual(Object.keys(data).sort(), ['user_id', 'user_info']);
        assert.equal(res.body.auth, sign(d.key, d.secret, SOCKET, channel, res.body.channel_data));
    });

    test("refuses another user's private channel with 403", async () => {
        const res = await broadcastingAuth(d.server, ada.cookie, SOCKET, `private-App.Models.User.${bob.id}`);
        assert.deepEqual(res, { status: 403, body: { message: 'Forbidden.' } });
    });

    test('refuses every channel name outside the two patterns with 403', async () => {
        const names = [
            'chat.1',
            'public-updates',
            'private-chat.1',
            'presence-App.Models.User.1',
            `presence-App.Models.User.${ada.id}`,
            'private-App.Models.Project.1',
            `private-encrypted-App.Models.User.${ada.id}`,
            'private-App.Models.User.',
            'private-App.Models.User.abc',
            `private-App.Models.User.${ada.id}.1`,
            `private-App.Models.User.${ada.id}x`,
            `private-App.Models.User.-${ada.id}`,
            'presence-chat.',
            'presence-chat',
            'presence-chat.42',
            'presence-chat.00000000-0000-4000-8000-000000000000',
            'presence-other.1',
        ];
        const refused = [];
        for (const name of names) {
            const res = await broadcastingAuth(d.server, ada.cookie, SOCKET, name);
            if (res.status !== 403 || res.body?.message !== 'Forbidden.') refused.push(`${JSON.stringify(name)} -> ${res.status} ${JSON.stringify(res.body)}`);
        }
        assert.deepEqual(refused, [], 'every name above answers 403 {"message":"Forbidden."}');
    });

    test('a user without can-show-chat gets 403 for a chat presence channel, and still their own private channel', async () => {
        const chat = `presence-chat.${await d.freshChat()}`;
        assert.deepEqual(await broadcastingAuth(d.server, reader.cookie, SOCKET, chat), {
            status: 403,
            body: { message: 'Forbidden.' },
        });
        const own = `private-App.Models.User.${reader.id}`;
        assert.deepEqual(await broadcastingAuth(d.server, reader.cookie, SOCKET, own), {
            status: 200,
            body: { auth: sign(d.key, d.secret, SOCKET, own) },
        });
    });

    test('answers 401 without a session, and with a session id the server never issued', async () => {
        const channel = `private-App.Models.User.${ada.id}`;
        const unauthenticated = { status: 401, body: { message: 'Unauthenticated.' } };
        assert.deepEqual(await broadcastingAuth(d.server, null, SOCKET, channel), unauthenticated);
        assert.deepEqual(
            await broadcastingAuth(d.server, 'vellum_session=not-a-session-the-server-issued', SOCKET, channel),
            unauthenticated,
        );
    });

    test('a signed-out session no longer signs anything', async () => {
        const carl = await d.signedInUser({ name: 'Carl' });
        const channel = `private-App.Models.User.${carl.id}`;
        assert.equal((await broadcastingAuth(d.server, carl.cookie, SOCKET, channel)).status, 200);
        const res = await fetch(`${d.server.base}/logout`, {
            method: 'POST',
            headers: { Accept: 'application/json', Cookie: carl.cookie },
        });
        assert.equal(res.status, 204, await res.text());
        assert.deepEqual(await broadcastingAuth(d.server, carl.cookie, SOCKET, channel), {
            status: 401,
            body: { message: 'Unauthenticated.' },
        });
    });

    test('refuses a cross-site request carrying the session with 403 (Sec-Fetch-Site, then Origin)', async () => {
        const channel = `private-App.Models.User.${ada.id}`;
        const refused = { status: 403, body: { message: 'Cross-site request refused.' } };
        const post = (headers) => broadcastingAuth(d.server, ada.cookie, SOCKET, channel, { headers });
        assert.deepEqual(await post({ 'Sec-Fetch-Site': 'cross-site' }), refused);
        assert.deepEqual(await post({ 'Sec-Fetch-Site': 'same-site' }), refused);
        assert.deepEqual(await post({ Origin: 'http://evil.example' }), refused);
        // Sec-Fetch-Site decides when present, even with a matching Origin.
        assert.deepEqual(await post({ 'Sec-Fetch-Site': 'cross-site', Origin: d.server.base }), refused);
        const signed = { status: 200, body: { auth: sign(d.key, d.secret, SOCKET, channel) } };
        assert.deepEqual(await post({ 'Sec-Fetch-Site': 'same-origin' }), signed);
        assert.deepEqual(await post({ Origin: d.server.base }), signed);
    });
});

describe('the WebSocket endpoint /app/{key}', () => {
    let d;
    let ada;
    before(async () => {
        d = await startDeployment();
        ada = await d.signedInUser({ name: 'Ada' });
    });
    after(() => d?.stop());

    test('upgrades without Origin (scripts) and with the origin of VELLUM_BASE_URL', async () => {
        assert.deepEqual(await upgrade(d.server, d.key), { status: 101 });
        assert.deepEqual(await upgrade(d.server, d.key, { Origin: d.server.base }), { status: 101 });
    });

    test('refuses the upgrade with 403 when Origin is another site', async () => {
        assert.deepEqual(await upgrade(d.server, d.key, { Origin: 'http://evil.example' }), { status: 403 });
        assert.deepEqual(await upgrade(d.server, d.key, { Origin: 'http://localhost:1' }), { status: 403 });
    });

    test('pusher-js connects and gets a socket id of the protocol form', async () => {
        const tab = await d.connect(ada);
        assert.match(tab.socketId, /^\d+\.\d+$/);
        await tab.roundTrip();
        tab.close();
    });

    test('an unknown app key gets error 4001 and pusher-js stops instead of reconnecting', async () => {
        const tab = await d.connect(ada, { key: 'not-the-key', wait: false });
        const error = await tab.errors.waitFor((e) => e?.error?.data?.code === 4001, 'error with code 4001');
        assert.equal(error.type, 'WebSocketError', JSON.stringify(error));
        // pusher-js handles 4000-4099 as "refused": it disconnects in the same turn.
        assert.equal(tab.pusher.connection.state, 'disconnected');
        assert.equal(tab.pusher.connection.socket_id, undefined);
        tab.close();
    });
});
