// Private and presence channels through laravel-echo 2 on pusher-js 8, against one server with
// client events enabled: subscription, refusal, forged signatures, presence membership across
// tabs, whispers, and what a deleted user keeps (nothing).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';

import {
    Recorder,
    broadcastingAuth,
    member,
    sign,
    snapshotProblems,
    startDeployment,
} from './harness.mjs';

/** Raw frames `event` on `channel` about `user` (member_added / member_removed carry user_id). */
function memberFrames(tab, event, channel, user) {
    return tab.frames.filter(
        (f) => f.event === event && f.channel === channel && String(f.data?.user_id) === String(user.id),
    );
}

/** Whispers `name` heard on an Echo channel, with pusher-js's metadata. */
function hear(tab, channel, name) {
    const heard = new Recorder(`${tab.label} whispers '${name}'`, tab.context);
    channel.listenForWhisper(name, (data, metadata) => heard.push({ data, metadata }));
    return heard;
}

const byId = (a, b) => (String(a.id) < String(b.id) ? -1 : 1);

describe('channels through laravel-echo', () => {
    let d;
    before(async () => {
        d = await startDeployment({ clientEvents: true });
    });
    after(() => d?.stop());

    test("a user's own private channel subscribes, signed for this very socket", async () => {
        const ada = await d.signedInUser({ name: 'Ada' });
        const tab = await d.connect(ada);
        const { events } = tab.privateUser(ada.id);
        await events.waitFor((e) => e.subscribed, 'subscribed()');
        const channel = `private-App.Models.User.${ada.id}`;
        assert.deepEqual(tab.auths.items, [
            { channel, status: 200, body: { auth: sign(d.key, d.secret, tab.socketId, channel) } },
        ]);
        assert.deepEqual(events.filter((e) => e.error), []);
    });

    test("another user's private channel is refused: error() fires, the endpoint said 403", async () => {
        const ada = await d.signedInUser({ name: 'Ada' });
        const bob = await d.signedInUser({ name: 'Bob' });
        const tab = await d.connect(ada);
        const { events } = tab.privateUser(bob.id);
        const { error } = await events.waitFor((e) => e.error, 'error()');
        assert.equal(error.type, 'AuthError', JSON.stringify(error));
        assert.deepEqual(tab.auths.items, [
            { channel: `private-App.Models.User.${bob.id}`, status: 403, body: { message: 'Forbidden.' } },
        ]);
        await tab.roundTrip();
        assert.deepEqual(events.filter((e) => e.subscribed), []);
    });

    test('a signature made for another socket is refused with subscription_error 401', async () => {
        const ada = await d.signedInUser({ name: 'Ada' });
        const tab = await d.connect(ada, {
            // A genuine signature from the server, but for a socket id that is not this one.
            authorize: ({ channelName }) => broadcastingAuth(d.server, ada.cookie, '1.1', channelName),
        });
        const channel = `private-App.Models.User.${ada.id}`;
        const { events } = tab.privateUser(ada.id);
        const { error } = await events.waitFor((e) => e.error, 'error()');
        assert.equal(error.type, 'AuthError', JSON.stringify(error));
        assert.equal(error.status, 401, JSON.stringify(error));
        assert.equal(typeof error.error, 'string', JSON.stringify(error));
        assert.deepEqual(
            tab.frames.filter((f) => f.channel === channel).map((f) => f.event),
            ['pusher:subscription_error'],
        );
        assert.deepEqual(events.filter((e) => e.subscribed), []);
    });

    test('a signature made with another secret is refused with subscription_error 401', async () => {
        const ada = await d.signedInUser({ name: 'Ada' });
        const tab = await d.connect(ada, {
            authorize: async ({ socketId, channelName }) => ({
                status: 200,
                body: { auth: sign(d.key, 'not-the-secret', socketId, channelName) },
            }),
        });
        const { events } = tab.privateUser(ada.id);
        const { error } = await events.waitFor((e) => e.error, 'error()');
        assert.equal(error.status, 401, JSON.stringify(error));
        assert.deepEqual(events.filter((e) => e.subscribed), []);
    });

    test('presence channel_data changed after signing is refused with 401; nobody sees the forged member', async () => {
        const chat = await d.freshChat();
        const [ada, bob, carl, dora] = await d.signedInUsers(['Ada', 'Bob', 'Carl', 'Dora']);
        const observer = (await d.connect(bob)).join(chat);
        await observer.here();
        // Ada's genuine authorization, with Carl put in as the member.
        const forger = await d.connect(ada, {
            authorize: async ({ socketId, channelName }) => {
                const res = await broadcastingAuth(d.server, ada.cookie, socketId, channelName);
                const forged = JSON.stringify({ user_id: carl.id, user_info: member(carl) });
                return { status: res.status, body: { ...res.body, channel_data: forged } };
            },
        });
        const forged = forger.join(chat);
        const { error } = await forged.events.waitFor((e) => e.error, 'error()');
        assert.equal(error.status, 401, JSON.stringify(error));
        // Barrier: Dora joins for real; the forged member would have come first.
        await (await d.connect(dora)).join(chat).here();
        await observer.events.waitFor((e) => e.joining, 'joining(Dora)');
        assert.deepEqual(observer.events.filter((e) => e.joining), [{ joining: member(dora) }]);
        assert.deepEqual(forged.events.filter((e) => e.here), []);
    });

    test('presence here() lists the user who joined', async () => {
        const ada = await d.signedInUser({ name: 'Ada' });
        const tab = await d.connect(ada);
        assert.deepEqual(await tab.join(await d.freshChat()).here(), [member(ada)]);
    });

    test('a second user joining fires joining on the first; closing their socket fires leaving', async () => {
        const chat = await d.freshChat();
        const ada = await d.signedInUser({ name: 'Ada' });
        const bob = await d.signedInUser({ name: 'Bob' });
        const first = (await d.connect(ada)).join(chat);
        assert.deepEqual(await first.here(), [member(ada)]);
        const bobTab = await d.connect(bob);
        const second = bobTab.join(chat);
        assert.deepEqual((await second.here()).sort(byId), [member(ada), member(bob)].sort(byId));
        const { joining } = await first.events.waitFor((e) => e.joining, 'joining(Bob)');
        assert.deepEqual(joining, member(bob));
        await bobTab.closed();
        const { leaving } = await first.events.waitFor((e) => e.leaving, 'leaving(Bob)');
        assert.deepEqual(leaving, member(bob));
        // Ada never hears about herself.
        assert.deepEqual(first.events.filter((e) => e.joining), [{ joining: member(bob) }]);
    });

    test('leaving the channel (socket still open) fires leaving on the others', async () => {
        const chat = await d.freshChat();
        const ada = await d.signedInUser({ name: 'Ada' });
        const bob = await d.signedInUser({ name: 'Bob' });
        const first = (await d.connect(ada)).join(chat);
        await first.here();
        const bobTab = await d.connect(bob);
        await bobTab.join(chat).here();
        await first.events.waitFor((e) => e.joining, 'joining(Bob)');
        bobTab.echo.leave(`chat.${chat}`);
        const { leaving } = await first.events.waitFor((e) => e.leaving, 'leaving(Bob)');
        assert.deepEqual(leaving, member(bob));
        assert.equal(bobTab.pusher.connection.state, 'connected');
    });

    test('the same user in two tabs: one joining for an observer, no leaving until the last tab closes', async () => {
        const chat = await d.freshChat();
        const channel = `presence-chat.${chat}`;
        const [ada, bob, carl, dora] = await d.signedInUsers(['Ada', 'Bob', 'Carl', 'Dora']);
        const observerTab = await d.connect(ada);
        const observer = observerTab.join(chat);
        await observer.here();

        const tab1 = await d.connect(bob);
        await tab1.join(chat).here();
        await observer.events.waitFor((e) => e.joining, 'joining(Bob)');
        const tab2 = await d.connect(bob);
        // The second tab sees Bob once, with Ada.
        assert.deepEqual((await tab2.join(chat).here()).sort(byId), [member(ada), member(bob)].sort(byId));
        // Barrier: Carl joins after Bob's second tab; a second member_added for Bob would come first.
        const carlTab = await d.connect(carl);
        await carlTab.join(chat).here();
        await observer.events.waitFor((e) => e.joining?.id === carl.id, 'joining(Carl)');
        assert.equal(memberFrames(observerTab, 'pusher_internal:member_added', channel, bob).length, 1);
        assert.deepEqual(observer.events.filter((e) => e.joining), [{ joining: member(bob) }, { joining: member(carl) }]);

        // One of Bob's tabs closes: Bob is still there.
        await tab1.closed();
        const doraTab = await d.connect(dora);
        await doraTab.join(chat).here();
        await observer.events.waitFor((e) => e.joining?.id === dora.id, 'joining(Dora)');
        assert.deepEqual(observer.events.filter((e) => e.leaving), []);
        assert.deepEqual(memberFrames(observerTab, 'pusher_internal:member_removed', channel, bob), []);

        // The last one closes: Bob leaves, once.
        await tab2.closed();
        const { leaving } = await observer.events.waitFor((e) => e.leaving, 'leaving(Bob)');
        assert.deepEqual(leaving, member(bob));
        await carlTab.closed();
        await observer.events.waitFor((e) => e.leaving?.id === carl.id, 'leaving(Carl)');
        assert.equal(memberFrames(observerTab, 'pusher_internal:member_removed', channel, bob).length, 1);
    });

    test('users joining at the same moment each see the other, from consistent snapshots', async () => {
        const [ada, bob, carl] = await d.signedInUsers(['Ada', 'Bob', 'Carl']);
        const [adaTab, bobTab, carlTab] = [await d.connect(ada), await d.connect(bob), await d.connect(carl)];
        const everyone = [member(ada), member(bob), member(carl)].sort(byId);
        const problems = [];
        // A race needs chances: a few rounds, each on a fresh chat.
        for (let round = 1; round <= 5; round++) {
            const chat = await d.freshChat();
            const a = adaTab.join(chat);
            const b = bobTab.join(chat);
            await Promise.all([a.here(), b.here()]);
            // Barrier: Carl joins after both; once both heard him, all about each other has come.
            const c = carlTab.join(chat);
            await c.here();
            for (const view of [a, b]) await view.events.waitFor((e) => e.joining?.id === carl.id, 'joining(Carl)');
            for (const [who, view] of [['Ada', a], ['Bob', b], ['Carl', c]]) {
                if (!isDeepStrictEqual(view.members(), everyone)) {
                    problems.push(`round ${round}: ${who}'s here/joining/leaving add up to ${JSON.stringify(view.members())}`);
                }
            }
            for (const tab of [adaTab, bobTab, carlTab]) problems.push(...snapshotProblems(tab, `presence-chat.${chat}`));
            for (const tab of [adaTab, bobTab, carlTab]) tab.echo.leave(`chat.${chat}`);
        }
        assert.deepEqual(problems, []);
    });

    test('a whisper reaches the other user and not the sender', async () => {
        const chat = await d.freshChat();
        const ada = await d.signedInUser({ name: 'Ada' });
        const bob = await d.signedInUser({ name: 'Bob' });
        const adaTab = await d.connect(ada);
        const bobTab = await d.connect(bob);
        const adaChat = adaTab.join(chat);
        const bobChat = bobTab.join(chat);
        await Promise.all([adaChat.here(), bobChat.here()]);
        const adaHeard = hear(adaTab, adaChat.channel, 'typing');
        const bobHeard = hear(bobTab, bobChat.channel, 'typing');

        adaChat.channel.whisper('typing', { text: 'hello', n: 1 });
        const got = await bobHeard.waitFor(() => true, "Ada's whisper");
        assert.deepEqual(got.data, { text: 'hello', n: 1 });
        // Barrier: Bob answers; an echo of Ada's whisper to Ada would come before the answer.
        bobChat.channel.whisper('typing', { text: 'hi back' });
        await adaHeard.waitFor(() => true, "Bob's whisper");
        assert.deepEqual(adaHeard.items.map((w) => w.data), [{ text: 'hi back' }]);
        assert.deepEqual(bobHeard.items.map((w) => w.data), [{ text: 'hello', n: 1 }]);
    });

    test('a client event on a presence channel names its sender (user_id)', async () => {
        const chat = await d.freshChat();
        const ada = await d.signedInUser({ name: 'Ada' });
        const bob = await d.signedInUser({ name: 'Bob' });
        const adaTab = await d.connect(ada);
        const bobTab = await d.connect(bob);
        const adaChat = adaTab.join(chat);
        const bobChat = bobTab.join(chat);
        await Promise.all([adaChat.here(), bobChat.here()]);
        const bobHeard = hear(bobTab, bobChat.channel, 'typing');
        adaChat.channel.whisper('typing', { text: 'hello' });
        const { metadata } = await bobHeard.waitFor(() => true, "Ada's whisper");
        assert.equal(String(metadata.user_id), String(ada.id), JSON.stringify(metadata));
        const frame = bobTab.frames.items.find((f) => f.event === 'client-typing');
        assert.deepEqual(
            { ...frame, user_id: String(frame.user_id) },
            { event: 'client-typing', channel: `presence-chat.${chat}`, data: { text: 'hello' }, user_id: String(ada.id) },
        );
    });

    test("a whisper on a user's private channel reaches their other tab, not the sending tab", async () => {
        const ada = await d.signedInUser({ name: 'Ada' });
        const tab1 = await d.connect(ada);
        const tab2 = await d.connect(ada);
        const one = tab1.privateUser(ada.id);
        const two = tab2.privateUser(ada.id);
        await Promise.all([
            one.events.waitFor((e) => e.subscribed, 'subscribed()'),
            two.events.waitFor((e) => e.subscribed, 'subscribed()'),
        ]);
        const heard1 = hear(tab1, one.channel, 'draft');
        const heard2 = hear(tab2, two.channel, 'draft');
        one.channel.whisper('draft', { from: 1 });
        await heard2.waitFor(() => true, "tab 1's whisper");
        two.channel.whisper('draft', { from: 2 });
        await heard1.waitFor(() => true, "tab 2's whisper");
        assert.deepEqual(heard1.items.map((w) => w.data), [{ from: 2 }]);
        assert.deepEqual(heard2.items.map((w) => w.data), [{ from: 1 }]);
    });

    test('a client event for a channel the socket never subscribed is not relayed', async () => {
        const chat = await d.freshChat();
        const [ada, bob, carl] = await d.signedInUsers(['Ada', 'Bob', 'Carl']);
        const adaTab = await d.connect(ada);
        const adaChat = adaTab.join(chat);
        await adaChat.here();
        const heard = hear(adaTab, adaChat.channel, 'typing');
        const bobTab = await d.connect(bob);
        // pusher-js's public send_event, on a channel Bob never asked for.
        bobTab.pusher.send_event('client-typing', { from: 'bob' }, `presence-chat.${chat}`);
        await bobTab.roundTrip();
        const carlTab = await d.connect(carl);
        const carlChat = carlTab.join(chat);
        await carlChat.here();
        carlChat.channel.whisper('typing', { from: 'carl' });
        await heard.waitFor(() => true, "Carl's whisper");
        assert.deepEqual(heard.items.map((w) => w.data), [{ from: 'carl' }]);
    });

    test("a deleted user's subscriptions get subscription_error 403, they leave, and their whispers stop", async () => {
        const chat = await d.freshChat();
        const [ada, bob, carl] = await d.signedInUsers(['Ada', 'Bob', 'Carl']);
        const adaTab = await d.connect(ada);
        const adaChat = adaTab.join(chat);
        await adaChat.here();
        const heard = hear(adaTab, adaChat.channel, 'typing');

        const bobTab = await d.connect(bob);
        const bobPrivate = bobTab.privateUser(bob.id);
        const bobChat = bobTab.join(chat);
        await Promise.all([bobPrivate.events.waitFor((e) => e.subscribed, 'subscribed()'), bobChat.here()]);
        await adaChat.events.waitFor((e) => e.joining, 'joining(Bob)');

        await d.deleteUser(bob);

        for (const events of [bobPrivate.events, bobChat.events]) {
            const { error } = await events.waitFor((e) => e.error, 'error() after the deletion');
            assert.equal(error.type, 'AuthError', JSON.stringify(error));
            assert.equal(error.status, 403, JSON.stringify(error));
            assert.equal(typeof error.error, 'string', JSON.stringify(error));
        }
        assert.deepEqual(
            bobTab.frames
                .filter((f) => f.event === 'pusher:subscription_error')
                .map((f) => f.channel)
                .sort(),
            [`presence-chat.${chat}`, `private-App.Models.User.${bob.id}`].sort(),
        );
        const { leaving } = await adaChat.events.waitFor((e) => e.leaving, 'leaving(Bob)');
        assert.deepEqual(leaving, member(bob));
        // The deleted user's session is gone too.
        assert.deepEqual(
            await broadcastingAuth(d.server, bob.cookie, bobTab.socketId, `private-App.Models.User.${bob.id}`),
            { status: 401, body: { message: 'Unauthenticated.' } },
        );

        // pusher-js still thinks it is subscribed and sends; the server must not relay.
        bobChat.channel.whisper('typing', { from: 'bob' });
        await bobTab.roundTrip();
        const carlTab = await d.connect(carl);
        const carlChat = carlTab.join(chat);
        // Bob is no member any more.
        assert.deepEqual((await carlChat.here()).sort(byId), [member(ada), member(carl)].sort(byId));
        carlChat.channel.whisper('typing', { from: 'carl' });
        await heard.waitFor(() => true, "Carl's whisper");
        assert.deepEqual(heard.items.map((w) => w.data), [{ from: 'carl' }]);
    });
});
