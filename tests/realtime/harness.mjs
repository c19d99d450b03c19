// The realtime suite's harness (issue 20): real `vellum-server` processes, users made with
// `vellum-admin`, sessions from `POST /login`, and unmodified pusher-js 8 / laravel-echo 2 clients
// whose channels are authorized by the server's own `POST /broadcasting/auth` (a
// `channelAuthorization.customHandler` that calls it with `fetch` and the user's cookie: Node's
// XMLHttpRequest shim, which pusher-js's built-in transport uses, refuses to send a Cookie header).
//
// Environment:
//   VELLUM_REALTIME_SERVER        the server binary (default <repo>/target/debug/vellum-server)
//   VELLUM_REALTIME_ADMIN         the admin CLI (default: vellum-admin beside the server)
//   VELLUM_REALTIME_NODE_MODULES  the directory whose node_modules holds pusher-js and laravel-echo
//                                 (default: the cache `.ci/run realtime` installs into, keyed by
//                                 this directory's package-lock.json)
//   VELLUM_TEST_REDIS_URL         Redis for the two-replica tests (they skip without it)
//   VELLUM_REALTIME_WAIT_MS       how long a wait for an expected frame lasts (default 5000)
//   TEST_LOG=1                    keep the servers' logs and print where they are
//
// Negative assertions ("no leaving", "not echoed to the sender") never sleep: they wait for a later
// event that the server must deliver after the one that must not come (a barrier), then look.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { constants as osConstants, homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');

export const WAIT_MS = Number(process.env.VELLUM_REALTIME_WAIT_MS || 5000);
const START_MS = 120_000;
// A request that takes this long is stuck (the slowest, a sign-in, hashes one password).
const FETCH_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// pusher-js and laravel-echo, from the cached install (never a node_modules in the tree).

function modulesDir() {
    if (process.env.VELLUM_REALTIME_NODE_MODULES) return process.env.VELLUM_REALTIME_NODE_MODULES;
    const lock = readFileSync(join(HERE, 'package-lock.json'));
    const hash = createHash('sha256').update(lock).digest('hex').slice(0, 16);
    const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
    return join(cache, 'vellum-ci', `realtime-${hash}`);
}

const MODULES = modulesDir();
if (!existsSync(join(MODULES, 'node_modules', 'pusher-js', 'package.json'))) {
    throw new Error(
        `pusher-js is not installed in ${MODULES}/node_modules: run \`.ci/run realtime\` once ` +
            '(it runs `npm ci` there), or point VELLUM_REALTIME_NODE_MODULES at a directory ' +
            'where `npm ci` ran with tests/realtime/package*.json',
    );
}
const requireFromCache = createRequire(join(MODULES, 'package.json'));
export const Pusher = requireFromCache('pusher-js');
// laravel-echo 2 is an ES module package (its CommonJS build cannot be required under its own
// "type": "module"): imported through its "exports" entry, as a bundler would.
const echoDir = join(MODULES, 'node_modules', 'laravel-echo');
const echoEntry = JSON.parse(readFileSync(join(echoDir, 'package.json'), 'utf8')).exports['.'].import;
export const Echo = (await import(pathToFileURL(join(echoDir, echoEntry)).href)).default;

// The install is the one package.json pins (VELLUM_REALTIME_NODE_MODULES may point elsewhere).
const pinned = JSON.parse(readFileSync(join(HERE, 'package.json'), 'utf8')).devDependencies;
for (const [name, version] of Object.entries(pinned)) {
    const installed = JSON.parse(readFileSync(join(MODULES, 'node_modules', name, 'package.json'), 'utf8')).version;
    if (installed !== version) throw new Error(`${MODULES} holds ${name} ${installed}, package.json pins ${version}`);
}
export const PUSHER_VERSION = pinned['pusher-js'];

// pusher-js's own log (silent by default) goes to a ring buffer that failure messages quote.
const pusherLog = [];
Pusher.log = (message) => {
    pusherLog.push(message);
    if (pusherLog.length > 40) pusherLog.shift();
};

// ---------------------------------------------------------------------------------------------
// Servers.

async function freePort() {
    return new Promise((ok, fail) => {
        const probe = createServer();
        probe.once('error', fail);
        probe.listen(0, '127.0.0.1', () => {
            const { port } = probe.address();
            probe.close(() => ok(port));
        });
    });
}

function binaries() {
    const server = process.env.VELLUM_REALTIME_SERVER || join(ROOT, 'target', 'debug', 'vellum-server');
    const admin = process.env.VELLUM_REALTIME_ADMIN || join(dirname(server), 'vellum-admin');
    for (const bin of [server, admin]) {
        if (!existsSync(bin)) throw new Error(`${bin} does not exist (cargo build -p vellum-server -p vellum-admin)`);
    }
    return { server, admin };
}

/** The environment a child gets: the caller's, without any VELLUM_ setting, plus `extra`. */
function childEnv(extra) {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VELLUM_')));
    return { ...env, ...extra };
}

function tail(path, lines = 25) {
    try {
        return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
        return '(no log)';
    }
}

/** One `vellum-server` process. */
class Server {
    constructor({ name, port, key, secret, logPath, child }) {
        Object.assign(this, { name, port, key, secret, logPath, child });
        this.base = `http://127.0.0.1:${port}`;
        this.exited = new Promise((ok) => child.once('exit', (code, signal) => ok({ code, signal })));
    }

    logTail(lines) {
        return `--- ${this.name} log (${this.logPath}), last lines:\n${tail(this.logPath, lines)}`;
    }

    async stop() {
        if (this.child.exitCode !== null || this.child.signalCode !== null) return;
        this.child.kill('SIGTERM');
        const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
        await this.exited;
        clearTimeout(timer);
    }
}

/** `fetch` on `server`; a request nothing answers fails with the server's state and log. */
async function serverFetch(server, path, init) {
    try {
        return await fetch(`${server.base}${path}`, { signal: AbortSignal.timeout(FETCH_MS), ...init });
    } catch (e) {
        const state =
            server.child.exitCode !== null || server.child.signalCode !== null
                ? `exited (${server.child.exitCode ?? server.child.signalCode})`
                : 'running';
        throw new Error(`${init?.method ?? 'GET'} ${path} on ${server.name} (${state}): ${e.cause?.message ?? e.message}\n${server.logTail()}`);
    }
}

// Servers still running when this process ends are killed with it: on a crash, and on the
// SIGTERM the test runner sends a file it cancels (a signal skips 'exit' handlers otherwise).
const live = new Set();
const workDirs = new Set();
process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
    if (process.env.TEST_LOG !== '1') for (const dir of workDirs) rmSync(dir, { recursive: true, force: true });
});
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.once(signal, () => process.exit(128 + osConstants.signals[signal]));
}

async function startServer({ name, work, databaseUrl, key, secret, clientEvents, redisUrl }) {
    const { server } = binaries();
    const port = await freePort();
    const logPath = join(work, `${name}.log`);
    const out = openSync(logPath, 'a');
    const env = childEnv({
        VELLUM_DATABASE_URL: databaseUrl,
        VELLUM_FILES_DIR: join(work, 'files'),
        VELLUM_LISTEN: `127.0.0.1:${port}`,
        VELLUM_BASE_URL: `http://127.0.0.1:${port}`,
        VELLUM_LOG: process.env.VELLUM_LOG || 'info',
        VELLUM_REALTIME_KEY: key,
        VELLUM_REALTIME_SECRET: secret,
        ...(clientEvents ? { VELLUM_REALTIME_CLIENT_EVENTS: 'true' } : {}),
        ...(redisUrl ? { VELLUM_REDIS_URL: redisUrl } : {}),
    });
    const child = spawn(server, [], { env, stdio: ['ignore', out, out] });
    closeSync(out);
    live.add(child);
    child.once('exit', () => live.delete(child));
    const s = new Server({ name, port, key, secret, logPath, child });
    const deadline = Date.now() + START_MS;
    for (;;) {
        if (child.exitCode !== null || child.signalCode !== null) {
            throw new Error(`${name} exited (${child.exitCode ?? child.signalCode})\n${s.logTail()}`);
        }
        try {
            const res = await fetch(`${s.base}/health/ready`, { signal: AbortSignal.timeout(2000) });
            if (res.status === 200) return s;
        } catch {
            // not listening yet
        }
        if (Date.now() > deadline) {
            await s.stop();
            throw new Error(`${name} was not ready within ${START_MS / 1000} s\n${s.logTail()}`);
        }
        await new Promise((ok) => setTimeout(ok, 100));
    }
}

/**
 * A deployment: `replicas` servers sharing one SQLite database, one realtime key and secret, and
 * (for more than one replica) one Redis. Every test file starts its own; `stop()` ends it.
 */
export async function startDeployment({ replicas = 1, clientEvents = true, redisUrl } = {}) {
    if (replicas > 1 && !redisUrl) throw new Error('more than one replica needs Redis');
    const work = mkdtempSync(join(tmpdir(), 'vellum-realtime-'));
    workDirs.add(work);
    const databaseUrl = `sqlite://${work}/vellum.db?mode=rwc`;
    // A key of their own per deployment: nothing left in a shared Redis by an earlier run can
    // reach this one's sockets.
    const key = `rt${randomBytes(8).toString('hex')}`;
    const secret = randomBytes(24).toString('hex');
    const deployment = new Deployment({ work, databaseUrl, key, secret });
    try {
        // The first user (and the schema) before any server: the CLI migrates an empty database.
        deployment.admin = await deployment.createUser({ role: 'super-admin', name: 'Admin' });
        for (let i = 0; i < replicas; i++) {
            deployment.servers.push(
                await startServer({
                    name: `replica-${i + 1}`,
                    work,
                    databaseUrl,
                    key,
                    secret,
                    clientEvents,
                    redisUrl,
                }),
            );
        }
        await deployment.signIn(deployment.admin);
    } catch (e) {
        await deployment.stop();
        throw e;
    }
    return deployment;
}

let userCounter = 0;

class Deployment {
    constructor({ work, databaseUrl, key, secret }) {
        Object.assign(this, { work, databaseUrl, key, secret });
        this.servers = [];
        this.clients = [];
    }

    /** The first replica (the only one, for a single-server deployment). */
    get server() {
        return this.servers[0];
    }

    logs() {
        return this.servers.map((s) => s.logTail()).join('\n');
    }

    /** `vellum-admin users create`; returns `{id, email, name, password, role}`. */
    async createUser({ role = 'super-admin', name } = {}) {
        const { admin } = binaries();
        userCounter += 1;
        const tag = `${process.pid}-${userCounter}`;
        const user = {
            email: `user-${tag}@realtime.test`,
            name: name ? `${name} ${tag}` : `User ${tag}`,
            password: `pw-${randomBytes(12).toString('hex')}`,
            role,
        };
        const args = ['users', 'create', '--email', user.email, '--name', user.name, '--role', role, '--password-stdin'];
        const { code, stdout, stderr } = await run(admin, args, {
            env: childEnv({ VELLUM_DATABASE_URL: this.databaseUrl, VELLUM_LOG: 'warn' }),
            input: `${user.password}\n`,
        });
        assert.equal(code, 0, `vellum-admin users create failed: ${stderr}`);
        user.id = JSON.parse(stdout.trim().split('\n').pop()).id;
        return user;
    }

    /** `POST /login` on `server`; stores and returns the `vellum_session=…` cookie pair. */
    async signIn(user, server = this.server) {
        const res = await serverFetch(server, '/login', {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
            body: JSON.stringify({ email: user.email, password: user.password }),
        });
        const body = await res.text();
        assert.equal(res.status, 200, `POST /login for ${user.email}: ${res.status} ${body}`);
        const pair = res.headers
            .getSetCookie()
            .map((c) => c.split(';', 1)[0])
            .find((c) => c.startsWith('vellum_session='));
        assert.ok(pair, `POST /login set no vellum_session cookie: ${res.headers.getSetCookie()}`);
        user.cookie = pair;
        return pair;
    }

    /** A new user of `role`, signed in (through `server`). */
    async signedInUser({ role = 'super-admin', name, server } = {}) {
        const user = await this.createUser({ role, name });
        await this.signIn(user, server);
        return user;
    }

    /** One signed-in user per name, made one after the other (each CLI run opens the database). */
    async signedInUsers(names, options = {}) {
        const users = [];
        for (const name of names) users.push(await this.signedInUser({ ...options, name }));
        return users;
    }

    /** `DELETE /users/{id}` as the deployment's admin (through `server`). */
    async deleteUser(user, server = this.server) {
        const res = await serverFetch(server, `/users/${user.id}`, {
            method: 'DELETE',
            headers: { Accept: 'application/json', Cookie: this.admin.cookie },
        });
        assert.equal(res.status, 204, `DELETE /users/${user.id}: ${res.status} ${await res.text()}`);
    }

    /**
     * A chat thread no other test uses (presence state is per channel): the thread of a new item
     * of a `realtime` collection, so every super-admin of the deployment may join it (team chat
     * authorizes `presence-chat.{id}` by the thread's own access). Returns the thread's id.
     */
    async freshChat() {
        const call = async (method, path, body) => {
            const res = await serverFetch(this.server, path, {
                method,
                headers: { Accept: 'application/json', 'Content-Type': 'application/json', Cookie: this.admin.cookie },
                body: JSON.stringify(body),
            });
            const text = await res.text();
            return { status: res.status, body: text ? JSON.parse(text) : null };
        };
        if (!this.chatCollection) {
            const made = await call('POST', '/collections', { slug: 'realtime', name: 'Realtime', fields: [{ name: 'name', type: 'string' }] });
            assert.ok([201, 422].includes(made.status), `POST /collections: ${made.status} ${JSON.stringify(made.body)}`);
            this.chatCollection = 'realtime';
        }
        const item = await call('POST', '/collections/realtime/items', { data: { name: 'thread' } });
        assert.equal(item.status, 201, `POST /collections/realtime/items: ${JSON.stringify(item.body)}`);
        const thread = await call('POST', '/chat/threads', { kind: 'item', collection: 'realtime', item_id: item.body.data.id });
        assert.equal(thread.status, 201, `POST /chat/threads: ${JSON.stringify(thread.body)}`);
        return thread.body.data.id;
    }

    /** A pusher-js client of `user` connected to `server`; see `Client`. */
    /** Waits for `pusher:connection_established` unless `wait` is false. */
    async connect(user, { server = this.server, wait = true, ...options } = {}) {
        const client = new Client(this, server, user, options);
        this.clients.push(client);
        if (wait) await client.connected();
        return client;
    }

    async stop() {
        for (const c of this.clients) c.close();
        await Promise.all(this.servers.map((s) => s.stop()));
        if (process.env.TEST_LOG === '1') {
            console.log(`realtime: server logs kept in ${this.work}`);
        } else {
            rmSync(this.work, { recursive: true, force: true });
        }
    }
}

function run(bin, args, { env, input }) {
    return new Promise((ok, fail) => {
        const child = spawn(bin, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
        child.once('error', fail);
        child.once('close', (code, signal) => {
            clearTimeout(timer);
            ok({ code: code ?? signal, stdout, stderr });
        });
        child.stdin.end(input);
    });
}

// ---------------------------------------------------------------------------------------------
// The auth endpoint, as clients call it.

/** `POST /broadcasting/auth` with `cookie`; `{status, body}` (body parsed when JSON). */
export async function broadcastingAuth(server, cookie, socketId, channelName, { form = false, headers = {} } = {}) {
    const body = form
        ? new URLSearchParams({ socket_id: socketId, channel_name: channelName }).toString()
        : JSON.stringify({ socket_id: socketId, channel_name: channelName });
    const res = await serverFetch(server, '/broadcasting/auth', {
        method: 'POST',
        headers: {
            'Content-Type': form ? 'application/x-www-form-urlencoded' : 'application/json',
            Accept: 'application/json',
            ...(cookie ? { Cookie: cookie } : {}),
            ...headers,
        },
        body,
    });
    const text = await res.text();
    let parsed = text;
    try {
        parsed = JSON.parse(text);
    } catch {
        // left as text: the assertion shows it
    }
    return { status: res.status, body: parsed };
}

/** The Pusher signature of `socketId:channel[:channelData]` with `secret`, as `key:hex`. */
export function sign(key, secret, socketId, channel, channelData) {
    const subject = channelData === undefined ? `${socketId}:${channel}` : `${socketId}:${channel}:${channelData}`;
    return `${key}:${createHmac('sha256', secret).update(subject).digest('hex')}`;
}

// ---------------------------------------------------------------------------------------------
// Clients.

/**
 * A recorder of things that happen (frames, callbacks) and can be waited for.
 * `waitFor(pred, what)` resolves with the first recorded item matching `pred`, now or later, and
 * fails after WAIT_MS with everything recorded so far.
 */
export class Recorder {
    constructor(label, context = () => '') {
        this.label = label;
        this.context = context;
        this.items = [];
        this.waiters = [];
    }

    push(item) {
        this.items.push(item);
        for (const w of [...this.waiters]) {
            if (w.pred(item)) {
                this.waiters.splice(this.waiters.indexOf(w), 1);
                clearTimeout(w.timer);
                w.ok(item);
            }
        }
    }

    filter(pred) {
        return this.items.filter(pred);
    }

    waitFor(pred, what, ms = WAIT_MS) {
        const found = this.items.find(pred);
        if (found !== undefined) return Promise.resolve(found);
        return new Promise((ok, fail) => {
            const w = { pred, ok };
            w.timer = setTimeout(() => {
                this.waiters.splice(this.waiters.indexOf(w), 1);
                fail(
                    new Error(
                        `${this.label}: no ${what} within ${ms} ms; recorded:\n` +
                            `${this.items.map((i) => JSON.stringify(i)).join('\n') || '(nothing)'}\n` +
                            this.context(),
                    ),
                );
            }, ms);
            this.waiters.push(w);
        });
    }
}

let tabCounter = 0;

/**
 * One browser tab's worth of client: a `Pusher` instance (pusher-js, unmodified) and an `Echo` on
 * top of it. `frames` records every decoded frame the socket received; `auths` every answer of
 * the auth endpoint; `errors` the connection's errors (`pusher:error` among them).
 *
 * `authorize(params)` may replace the call to the server (it returns `{status, body}`), for the
 * tests that tamper with a signature.
 */
class Client {
    constructor(deployment, server, user, { authorize, key = deployment.key } = {}) {
        tabCounter += 1;
        this.label = `${user.name} (tab ${tabCounter}, ${server.name})`;
        this.deployment = deployment;
        this.server = server;
        this.user = user;
        const context = () =>
            `pusher-js log (last lines):\n${pusherLog.join('\n')}\n${deployment.logs()}`;
        this.frames = new Recorder(`${this.label} frames`, context);
        this.auths = new Recorder(`${this.label} auth answers`, context);
        this.errors = new Recorder(`${this.label} connection errors`, context);
        this.context = context;
        const call =
            authorize ??
            (({ socketId, channelName }) => broadcastingAuth(server, user.cookie, socketId, channelName));
        this.pusher = new Pusher(key, {
            cluster: '',
            wsHost: '127.0.0.1',
            wsPort: server.port,
            forceTLS: false,
            enabledTransports: ['ws'],
            disableStats: true,
            channelAuthorization: {
                customHandler: (params, callback) => {
                    call(params).then(
                        ({ status, body }) => {
                            this.auths.push({ channel: params.channelName, status, body });
                            if (status === 200) callback(null, body);
                            else callback(new Error(`POST /broadcasting/auth: ${status} ${JSON.stringify(body)}`), null);
                        },
                        (err) => callback(err, null),
                    );
                },
            },
        });
        // A copy: pusher-js keeps a presence snapshot's `hash` as its live member list and
        // changes it as members come and go.
        this.pusher.connection.bind('message', (frame) => this.frames.push(structuredClone(frame)));
        this.pusher.connection.bind('error', (err) => this.errors.push(err));
        this.echo = new Echo({ broadcaster: 'pusher', client: this.pusher, withoutInterceptors: true });
    }

    connected() {
        return new Promise((ok, fail) => {
            if (this.pusher.connection.state === 'connected') return ok();
            const timer = setTimeout(
                () => fail(new Error(`${this.label}: not connected within ${WAIT_MS} ms (state ${this.pusher.connection.state})\n${this.context()}`)),
                WAIT_MS,
            );
            this.pusher.connection.bind('connected', () => {
                clearTimeout(timer);
                ok();
            });
        });
    }

    get socketId() {
        return this.pusher.connection.socket_id;
    }

    /**
     * A ping on this socket, answered by a pong: once it is back, the server has handled every
     * frame this client sent before it (one socket's frames are handled in order).
     */
    async roundTrip() {
        const marker = this.frames.items.length;
        this.pusher.send_event('pusher:ping', {});
        await this.frames.waitFor(
            (f) => f.event === 'pusher:pong' && this.frames.items.indexOf(f) >= marker,
            'pusher:pong after pusher:ping',
        );
    }

    /** Echo's presence channel `chat.{chatId}` with its callbacks recorded. */
    join(chatId) {
        const events = new Recorder(`${this.label} presence-chat.${chatId}`, this.context);
        const channel = this.echo
            .join(`chat.${chatId}`)
            .here((members) => events.push({ here: members }))
            .joining((member) => events.push({ joining: member }))
            .leaving((member) => events.push({ leaving: member }))
            .error((error) => events.push({ error }));
        // Who Echo's callbacks say is there: here(), then joining and leaving, in order.
        const members = () => {
            const seen = new Map();
            for (const e of events.items) {
                for (const m of e.here ?? []) seen.set(String(m.id), m);
                if (e.joining) seen.set(String(e.joining.id), e.joining);
                if (e.leaving) seen.delete(String(e.leaving.id));
            }
            return [...seen.values()].sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1));
        };
        return { channel, events, members, here: () => events.waitFor((e) => e.here, 'here()').then((e) => e.here) };
    }

    /** Echo's private channel `App.Models.User.{userId}` with its callbacks recorded. */
    privateUser(userId) {
        const events = new Recorder(`${this.label} private-App.Models.User.${userId}`, this.context);
        const channel = this.echo
            .private(`App.Models.User.${userId}`)
            .subscribed(() => events.push({ subscribed: true }))
            .error((error) => events.push({ error }));
        return { channel, events };
    }

    close() {
        this.pusher.disconnect();
    }

    /** Disconnects and resolves once pusher-js reports the socket closed. */
    async closed() {
        if (this.pusher.connection.state === 'disconnected') return;
        const done = new Promise((ok) => this.pusher.connection.bind('disconnected', ok));
        this.pusher.disconnect();
        await done;
    }
}

/** A member as Echo's `here`/`joining`/`leaving` report it for `user`. */
export function member(user) {
    return { id: user.id, name: user.name };
}

/** A raw WebSocket upgrade of `/app/{key}` with `headers`: `{status}` (101 when upgraded). */
export function upgrade(server, key, headers = {}) {
    return new Promise((ok, fail) => {
        const req = httpRequest({
            host: '127.0.0.1',
            port: server.port,
            path: `/app/${key}?protocol=7&client=js&version=${PUSHER_VERSION}&flash=false`,
            headers: {
                Connection: 'Upgrade',
                Upgrade: 'websocket',
                'Sec-WebSocket-Version': '13',
                'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
                ...headers,
            },
        });
        req.setTimeout(WAIT_MS, () => req.destroy(new Error(`no answer to the upgrade within ${WAIT_MS} ms`)));
        req.once('upgrade', (res, socket) => {
            socket.destroy();
            ok({ status: res.statusCode });
        });
        req.once('response', (res) => {
            res.resume();
            ok({ status: res.statusCode });
        });
        req.once('error', fail);
        req.end();
    });
}

/** What is wrong with the presence snapshots (`pusher_internal:subscription_succeeded`) `tab`
 * got for `channel`: `ids`, the keys of `hash` and `count` must describe the same members. */
export function snapshotProblems(tab, channel) {
    return tab.frames
        .filter((f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === channel)
        .flatMap((f) => {
            const p = f.data?.presence ?? {};
            const ids = (p.ids ?? []).map(String).sort();
            const keys = Object.keys(p.hash ?? {}).sort();
            const ok = JSON.stringify(ids) === JSON.stringify(keys) && p.count === ids.length;
            return ok ? [] : [`${tab.label}: ${JSON.stringify(f)}`];
        });
}
