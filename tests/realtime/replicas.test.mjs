// Two replicas behind one Redis (VELLUM_REDIS_URL) and one database: presence, whispers and
// revocation reach sockets on the other replica. Skipped without VELLUM_TEST_REDIS_URL.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';

import {
    Recorder,
    broadcastingAuth,
    member,
    snapshotProblems,
    startDeployment,
} from './harness.mjs';

const REDIS = process.env.VELLUM_TEST_REDIS_URL?.trim();

const byId = (a, b) => (String(a.id) < String(b.id) ? -1 : 1);

function memberFrames(tab, event, channel, user) {
    return tab.frames.filter(
        (f) => f.event === event && f.channel === channel && String(f.data?.user_id) === String(user.id),
    );
}

function hear(tab, channel, name) {
    const heard = new Recorder(`${tab.label} whispers '${name}'`, tab.context);
    channel.listenForWhisper(name, (data) => heard.push(data));
    return heard;
}

describe('two replicas over Redis', { skip: REDIS ? false : 'VELLUM_TEST_REDIS_URL is not set' }, () => {
    let d;
    let r1;
    let r2;
    before(async () => {
        // A database of Redis's own for this suite (as the soak uses /13); the deployment's
        // random realtime key keeps runs apart within it.
        d = await startDeployment({ replicas: 2, clientEvents: true, redisUrl: `${REDIS.replace(/\/+$/, '')}/12` });
        [r1, r2] = d.servers;
    });
    after(() => d?.stop());

    test('users on different replicas see each other join and leave (a session from one replica signs on the other)', async () => {
        const chat = await d.freshChat();
        const ada = await d.signedInUser({ name: 'Ada', server: r1 });
        const bob = await d.signedInUser({ name: 'Bob', server: r1 });
        const adaChat = (await d.connect(ada, { server: r1 })).join(chat);
        assert.deepEqual(await adaChat.here(), [member(ada)]);

        const bobTab = await d.connect(bob, { server: r2 });
        const bobChat = bobTab.join(chat);
        assert.deepEqual((await bobChat.here()).sort(byId), [member(ada), member(bob)].sort(byId));
        assert.deepEqual(bobTab.auths.items.map((a) => a.status), [200]);
        const { joining } = await adaChat.events.waitFor((e) => e.joining, 'joining(Bob) from replica 2');
        assert.deepEqual(joining, member(bob));

        await bobTab.closed();
        const { leaving } = await adaChat.events.waitFor((e) => e.leaving, 'leaving(Bob) from replica 2');
        assert.deepEqual(leaving, member(bob));
    });

    test('whispers cross replicas both ways and are not echoed to the sender', async () => {
        const chat = await d.freshChat();
        const ada = await d.signedInUser({ name: 'Ada', server: r1 });
        const bob = await d.signedInUser({ name: 'Bob', server: r2 });
        const adaTab = await d.connect(ada, { server: r1 });
        const bobTab = await d.connect(bob, { server: r2 });
        const adaChat = adaTab.join(chat);
        const bobChat = bobTab.join(chat);
        await Promise.all([adaChat.here(), bobChat.here()]);
        const adaHeard = hear(adaTab, adaChat.channel, 'typing');
        const bobHeard = hear(bobTab, bobChat.channel, 'typing');

        adaChat.channel.whisper('typing', { from: 'ada' });
        await bobHeard.waitFor(() => true, "Ada's whisper from replica 1");
        bobChat.channel.whisper('typing', { from: 'bob' });
        await adaHeard.waitFor(() => true, "Bob's whisper from replica 2");
        assert.deepEqual(adaHeard.items, [{ from: 'bob' }]);
        assert.deepEqual(bobHeard.items, [{ from: 'ada' }]);
    });

    test('users joining on both replicas at the same moment each see the other, from consistent snapshots', async () => {
        const [ada, bob, carl] = await d.signedInUsers(['Ada', 'Bob', 'Carl']);
        const adaTab = await d.connect(ada, { server: r1 });
        const bobTab = await d.connect(bob, { server: r2 });
        const carlTab = await d.connect(carl, { server: r1 });
        const everyone = [member(ada), member(bob), member(carl)].sort(byId);
        const problems = [];
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

    test('the same user on both replicas joins once and leaves only with the last socket', async () => {
        const chat = await d.freshChat();
        const channel = `presence-chat.${chat}`;
        const [ada, bob, carl, dora] = await d.signedInUsers(['Ada', 'Bob', 'Carl', 'Dora']);
        const observerTab = await d.connect(ada, { server: r1 });
        const observer = observerTab.join(chat);
        await observer.here();

        const onR1 = await d.connect(bob, { server: r1 });
        await onR1.join(chat).here();
        await observer.events.waitFor((e) => e.joining, 'joining(Bob)');
        const onR2 = await d.connect(bob, { server: r2 });
        assert.deepEqual((await onR2.join(chat).here()).sort(byId), [member(ada), member(bob)].sort(byId));
        // Barrier: Carl joins on replica 2 after Bob's second socket there.
        await (await d.connect(carl, { server: r2 })).join(chat).here();
        await observer.events.waitFor((e) => e.joining?.id === carl.id, 'joining(Carl)');
        assert.equal(memberFrames(observerTab, 'pusher_internal:member_added', channel, bob).length, 1);
        assert.deepEqual(observer.events.filter((e) => e.joining), [{ joining: member(bob) }, { joining: member(carl) }]);

        // Bob's socket on replica 1 closes: his socket on replica 2 keeps him present.
        await onR1.closed();
        const doraTab = await d.connect(dora, { server: r2 });
        await doraTab.join(chat).here();
        await observer.events.waitFor((e) => e.joining?.id === dora.id, 'joining(Dora)');
        assert.deepEqual(observer.events.filter((e) => e.leaving), []);
        // A newcomer on replica 1 still sees Bob.
        const late = await d.connect(carl, { server: r1 });
        assert.deepEqual(
            (await late.join(chat).here()).sort(byId),
            [member(ada), member(bob), member(carl), member(dora)].sort(byId),
        );

        await onR2.closed();
        const { leaving } = await observer.events.waitFor((e) => e.leaving, 'leaving(Bob)');
        assert.deepEqual(leaving, member(bob));
        // Barrier: Dora leaves after Bob; a second member_removed for Bob would come first.
        await doraTab.closed();
        await observer.events.waitFor((e) => e.leaving?.id === dora.id, 'leaving(Dora)');
        assert.equal(memberFrames(observerTab, 'pusher_internal:member_removed', channel, bob).length, 1);
    });

    test('a user deleted through one replica loses their subscriptions on the other', async () => {
        const chat = await d.freshChat();
        const ada = await d.signedInUser({ name: 'Ada', server: r1 });
        const bob = await d.signedInUser({ name: 'Bob', server: r2 });
        const adaChat = (await d.connect(ada, { server: r1 })).join(chat);
        await adaChat.here();
        const bobTab = await d.connect(bob, { server: r2 });
        const bobPrivate = bobTab.privateUser(bob.id);
        const bobChat = bobTab.join(chat);
        await Promise.all([bobPrivate.events.waitFor((e) => e.subscribed, 'subscribed()'), bobChat.here()]);
        await adaChat.events.waitFor((e) => e.joining, 'joining(Bob)');

        await d.deleteUser(bob, r1);

        for (const events of [bobPrivate.events, bobChat.events]) {
            const { error } = await events.waitFor((e) => e.error, 'error() after the deletion on replica 1');
            assert.equal(error.type, 'AuthError', JSON.stringify(error));
            assert.equal(error.status, 403, JSON.stringify(error));
        }
        const { leaving } = await adaChat.events.waitFor((e) => e.leaving, 'leaving(Bob)');
        assert.deepEqual(leaving, member(bob));
        assert.deepEqual(
            await broadcastingAuth(r2, bob.cookie, bobTab.socketId, `private-App.Models.User.${bob.id}`),
            { status: 401, body: { message: 'Unauthenticated.' } },
        );
    });
});

describe('two deployments on one Redis server', { skip: REDIS ? false : 'VELLUM_TEST_REDIS_URL is not set' }, () => {
    let ours;
    let theirs;
    before(async () => {
        // Each deployment has its own database number (as the cache and sessions are kept apart)
        // and its own realtime key; Redis pub/sub ignores database numbers, the server must not.
        const base = REDIS.replace(/\/+$/, '');
        ours = await startDeployment({ replicas: 2, clientEvents: true, redisUrl: `${base}/12` });
        theirs = await startDeployment({ replicas: 2, clientEvents: true, redisUrl: `${base}/11` });
    });
    after(async () => {
        await ours?.stop();
        await theirs?.stop();
    });

    test("a whisper in one deployment never reaches the other's sockets on the same channel name", async () => {
        // Both fresh databases made their admin first: the same id, so the same private channel.
        assert.equal(String(ours.admin.id), String(theirs.admin.id), 'precondition: the admins share an id');
        const channel = `App.Models.User.${ours.admin.id}`;
        const subscribe = async (d, server) => {
            const tab = await d.connect(d.admin, { server });
            const sub = tab.privateUser(d.admin.id);
            await sub.events.waitFor((e) => e.subscribed, `subscribed() to ${channel}`);
            return { tab, sub, heard: hear(tab, sub.channel, 'note') };
        };
        const [ours1, ours2] = [await subscribe(ours, ours.servers[0]), await subscribe(ours, ours.servers[1])];
        const [theirs1, theirs2] = [
            await subscribe(theirs, theirs.servers[0]),
            await subscribe(theirs, theirs.servers[1]),
        ];

        // Their whisper crosses their Redis fan-out (replica 1 to replica 2)...
        theirs1.sub.channel.whisper('note', { from: 'theirs' });
        await theirs2.heard.waitFor(() => true, 'their own whisper, across their replicas');
        // ...then ours crosses ours; had theirs reached our replicas, it would have come first.
        ours2.sub.channel.whisper('note', { from: 'ours' });
        await ours1.heard.waitFor(() => true, 'our whisper, across our replicas');
        const leak = "a whisper crossed from one deployment's Redis fan-out into the other's";
        assert.deepEqual(ours1.heard.items, [{ from: 'ours' }], leak);
        assert.deepEqual(ours2.heard.items, [], leak);
        assert.deepEqual(theirs1.heard.items, [], leak);
    });
});
