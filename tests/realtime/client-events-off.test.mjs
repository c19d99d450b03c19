// Client events are off unless VELLUM_REALTIME_CLIENT_EVENTS is set: a whisper is answered with
// pusher:error and relayed to nobody, and the socket stays usable.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Recorder, member, startDeployment } from './harness.mjs';

describe('client events disabled (VELLUM_REALTIME_CLIENT_EVENTS unset)', () => {
    let d;
    before(async () => {
        d = await startDeployment({ clientEvents: false });
    });
    after(() => d?.stop());

    test('a whisper gets pusher:error back and reaches nobody', async () => {
        const chat = await d.freshChat();
        const [ada, bob, carl] = await d.signedInUsers(['Ada', 'Bob', 'Carl']);
        const adaTab = await d.connect(ada);
        const bobTab = await d.connect(bob);
        const adaChat = adaTab.join(chat);
        const bobChat = bobTab.join(chat);
        await Promise.all([adaChat.here(), bobChat.here()]);
        const heard = new Recorder(`${bobTab.label} whispers`, bobTab.context);
        bobChat.channel.listenForWhisper('typing', (data) => heard.push(data));

        adaChat.channel.whisper('typing', { text: 'hello' });
        const frame = await adaTab.frames.waitFor((f) => f.event === 'pusher:error', 'pusher:error');
        assert.equal(typeof frame.data?.message, 'string', JSON.stringify(frame));
        assert.notEqual(frame.data.message, '', JSON.stringify(frame));
        // The error does not end the connection or the subscription.
        await adaTab.roundTrip();
        assert.equal(adaTab.pusher.connection.state, 'connected');

        // Barrier: Carl joins after the whisper was refused; Bob hears Carl join and nothing else.
        await (await d.connect(carl)).join(chat).here();
        const { joining } = await bobChat.events.waitFor((e) => e.joining?.id === carl.id, 'joining(Carl)');
        assert.deepEqual(joining, member(carl));
        assert.deepEqual(heard.items, []);
        assert.deepEqual(bobTab.frames.filter((f) => f.event.startsWith('client-')), []);
    });
});
