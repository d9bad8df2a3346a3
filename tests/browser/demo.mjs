// Drives the brisvox demo page in headless Debian chromium with a fake
// microphone, one call per transport: over WebRTC (the page's default) and
// over the websocket fallback (`?transport=ws`). Each call checks, from the
// page's own state (window.brisvoxDemo): the transport, the mock label, bot
// audio audible at the playback worklet's output (on WebRTC: the worklet
// meters the remote track the page plays), a barge-in while the bot speaks
// that leaves it silent until the caller's final transcript (on the
// websocket the clear flushes the page's jitter buffer; on WebRTC the server
// stops sending and the page mutes what the browser's own jitter buffer
// held), the transcript, the answer played, and a latency bar. Saves a
// screenshot per call. The server is stopped on every exit.
//
// A third call ('webrtc-loss') runs over WebRTC through 5 % packet loss each
// way: a second server binds its WebRTC ports on 127.0.0.1 and announces
// 127.0.0.2 (`[server.webrtc] public_ip`, as behind a 1:1 NAT), where
// `brisvox-bench lossy-proxy` forwards every port of the range, dropping a
// seeded 5 % of the datagrams each way; the call must connect over WebRTC,
// be transcribed and answer audibly, and the proxy must have dropped
// datagrams both ways.
//
// Env: BRISVOX_BIN (the server binary, required), BENCH_BIN (default
// brisvox-bench beside BRISVOX_BIN: the lossy proxy), AGENT_FILE (default
// tests/browser/agent.toml: local LLM and TTS, mock STT), CHROMIUM (default
// /usr/bin/chromium), OUT_DIR (default target/browser-test), TRANSPORTS
// (default "webrtc,ws,webrtc-loss": the calls to make, in order),
// LOSS_PORTS (default 51700-51715: the loss call's UDP ports).
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const bin = process.env.BRISVOX_BIN;
if (!bin) throw new Error('BRISVOX_BIN is not set (run tests/browser/run.sh)');
const outDir = resolve(root, process.env.OUT_DIR || 'target/browser-test');
mkdirSync(outDir, { recursive: true });
const t0 = Date.now();
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);

// The fake microphone: 7 s, looped by chromium. Silence, 1.2 s of loud
// speech-like sound from 2.5 s (barge-in over the greeting, and the caller's
// turn; 2.5 s leaves a slow TTS time to start the greeting), silence for the
// answer.
function fakeMicWav(path) {
  const rate = 16000, secs = 7, n = rate * secs;
  const data = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    let v = 0;
    if (t >= 2.5 && t < 3.7) {
      const env = 0.6 + 0.4 * Math.sin(2 * Math.PI * 4 * t); // syllable-like
      v = env * (0.30 * Math.sin(2 * Math.PI * 180 * t) + 0.15 * Math.sin(2 * Math.PI * 360 * t)
        + 0.08 * Math.sin(2 * Math.PI * 720 * t));
    }
    data.writeInt16LE(Math.round(v * 32767), i * 2);
  }
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + data.length, 4); h.write('WAVE', 8);
  h.write('fmt ', 12); h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24); h.writeUInt32LE(rate * 2, 28); h.writeUInt16LE(2, 32); h.writeUInt16LE(16, 34);
  h.write('data', 36); h.writeUInt32LE(data.length, 40);
  writeFileSync(path, Buffer.concat([h, data]));
}

// Starts `brisvox serve` on a port the OS picks (127.0.0.1:0) and resolves
// with the address from its "listening local_addr=..." log line.
function startServer(agentFile = process.env.AGENT_FILE || join(here, 'agent.toml')) {
  const child = spawn(bin, ['serve', '--agent', agentFile, '--bind', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG || 'info', NO_COLOR: '1' },
  });
  let seen = '';
  const server = { child, addr: null, exited: null, logs: () => seen };
  const ready = new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not say where it listens in 30 s:\n' + seen)), 30000);
    const onData = (d) => {
      seen += d.toString();
      const m = seen.match(/listening[^\n]*?\b(127\.0\.0\.1:[1-9]\d*)/);
      if (m && !server.addr) { clearTimeout(timer); server.addr = m[1]; resolvePromise(server); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (e) => { clearTimeout(timer); reject(new Error(`could not start ${bin}: ${e.message}`)); });
    child.on('exit', (code, signal) => {
      server.exited = signal || code;
      clearTimeout(timer);
      reject(new Error(`server exited (${signal || code}) before listening:\n${seen}`));
    });
  });
  return { server, ready };
}

// Stops the server: SIGTERM (it drains), SIGKILL if it is still there after 10 s.
async function stopServer(server) {
  const child = server.child;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
  await gone;
  clearTimeout(timer);
}

async function waitFor(page, what, fn, timeoutMs) {
  try {
    await page.waitForFunction(fn, null, { timeout: timeoutMs, polling: 50 });
  } catch (e) {
    const s = await page.evaluate(() => JSON.stringify(window.brisvoxDemo));
    throw new Error(`timed out waiting for ${what}; page state: ${s}`);
  }
  log('ok:', what);
}

const failures = [];
const tail = (text) => text.split('\n').slice(-40).join('\n');
let prefix = '';
const check = (cond, msg) => { if (!cond) failures.push(prefix + msg); log(cond ? 'ok:' : 'FAIL:', prefix + msg); };
const transports = (process.env.TRANSPORTS || 'webrtc,ws,webrtc-loss').split(',').filter(Boolean);
for (const t of transports) if (!['webrtc', 'ws', 'webrtc-loss'].includes(t)) throw new Error(`TRANSPORTS: unknown ${t}`);
const benchBin = process.env.BENCH_BIN || join(dirname(bin), 'brisvox-bench');
const lossPorts = (process.env.LOSS_PORTS || '51700-51715').split('-').map(Number);
const LOSS_PERCENT = 5;
// On WebRTC a clear cannot reach into the browser's jitter buffer (it held
// 33-333 ms in runs here); the page mutes the bot's track at the clear until
// the next answer starts. Bound on what is still heard after the clear, in
// ms of audible output: the mute takes effect at the next render quantum
// (2.7 ms), so a few quanta at most.
const WEBRTC_HELD_MS = 20;

// One call over `transport` ('webrtc' or 'ws') on a fresh load of the page.
async function oneCall(page, transport, server) {
  const webrtc = transport === 'webrtc';
  await page.goto(`http://${server.addr}/` + (webrtc ? '' : '?transport=ws'));
  await page.click('#toggle');
  await waitFor(page, 'the started event', () => window.brisvoxDemo.started !== null, 10000);
  const on = await page.evaluate(() => ({ transport: window.brisvoxDemo.transport, fallback: window.brisvoxDemo.fallback }));
  check(on.transport === (webrtc ? 'webrtc' : 'websocket'), `the call is on ${transport} (${JSON.stringify(on)})`);
  const shown = await page.textContent('#transport');
  check(await page.isVisible('#transport') && shown.includes(webrtc ? 'WebRTC' : 'websocket'),
    `the page says which transport it is on (${shown})`);
  const started = await page.evaluate(() => window.brisvoxDemo.started.providers);
  log('providers:', JSON.stringify(started));
  const anyMock = Object.values(started).includes('mock');
  check(await page.isVisible('#mock') === anyMock, `the mock banner is shown iff a provider is a mock (${anyMock})`);
  const banner = anyMock ? await page.textContent('#mock-text') : '';
  for (const k of ['stt', 'llm', 'tts']) {
    const named = banner.includes('the ' + k.toUpperCase() + ' is a mock');
    check(named === (started[k] === 'mock'), `the banner names the ${k.toUpperCase()} iff it is a mock (${banner})`);
  }

  // Bot audio played: the playback worklet's output was audible (not only
  // that bytes arrived or samples were consumed).
  await waitFor(page, 'greeting audio played (100 ms audible at the worklet output)',
    () => window.brisvoxDemo.playedSamples > 1600 && window.brisvoxDemo.audibleMs > 100, 10000);

  // The barge-in: the fake microphone talks over the greeting, the server
  // sends `clear`, the worklet drops what it had queued and goes silent.
  await waitFor(page, 'a barge-in (clear)', () => window.brisvoxDemo.clears >= 1, 15000);
  await waitFor(page, 'the playback flush', () => window.brisvoxDemo.flushes.length >= 1, 2000);
  const flush = await page.evaluate(() => window.brisvoxDemo.flushes[0]);
  const events = await page.evaluate(() => window.brisvoxDemo.eventLog);
  const clearEv = events.find((e) => e.type === 'clear');
  // The greeting's bot_speaking_stopped says it was interrupted (the server
  // sends it before or after the clear: both orders were seen).
  await waitFor(page, 'the greeting\'s bot_speaking_stopped',
    () => window.brisvoxDemo.eventLog.some((e) => e.type === 'bot_speaking_stopped'), 5000);
  const stopEv = (await page.evaluate(() => window.brisvoxDemo.eventLog)).find((e) => e.type === 'bot_speaking_stopped');
  check(stopEv.interrupted === true,
    `the greeting was interrupted (${JSON.stringify(stopEv)}, ${Math.round(stopEv.atMs - clearEv.atMs)} ms from the clear)`);
  check(typeof flush.sinceAudibleMs === 'number' && flush.sinceAudibleMs < 300,
    `bot audio was audible at most 300 ms before the clear (${flush.sinceAudibleMs} ms)`);
  if (!webrtc) {
    check(flush.dropped > 0, `the clear dropped queued bot audio (${flush.dropped} samples)`);
    check(flush.bufferedAfter === 0, `the jitter buffer is empty right after clear (${JSON.stringify(flush)})`);
  }

  await waitFor(page, 'a final transcript', () => window.brisvoxDemo.transcripts.length >= 1, 15000);
  check((await page.textContent('#transcript')).includes('you: ' + await page.evaluate(() => window.brisvoxDemo.transcripts[0])),
    'the final transcript is on the page');
  if (started.stt === 'mock') {
    check((await page.textContent('#transcript')).includes('mock transcript'), 'the mock STT\'s text is on the page');
  }
  // From the clear to the caller's final transcript the bot must be silent:
  // no new bot audio arrived and the worklet played nothing audible.
  const log2 = await page.evaluate(() => window.brisvoxDemo.eventLog);
  const finalEv = log2.slice(log2.findIndex((e) => e.type === 'clear') + 1).find((e) => e.type === 'transcript' && e.final);
  check(finalEv && finalEv.atMs - clearEv.atMs > 200,
    `the final transcript came well after the clear (${finalEv && Math.round(finalEv.atMs - clearEv.atMs)} ms)`);
  if (webrtc) {
    check(finalEv && finalEv.audibleMs - flush.audibleMs < WEBRTC_HELD_MS,
      `at most ${WEBRTC_HELD_MS} ms audible after the clear (the page mutes what the jitter buffer held) ` +
      `(${finalEv && (finalEv.audibleMs - flush.audibleMs).toFixed(1)} ms)`);
  } else {
    check(finalEv && finalEv.received === clearEv.received,
      `no bot audio arrived between the clear and the final transcript (${finalEv && finalEv.received - clearEv.received} samples)`);
    check(finalEv && finalEv.audibleMs === flush.audibleMs,
      `nothing audible played after the clear (${finalEv && (finalEv.audibleMs - flush.audibleMs).toFixed(1)} ms)`);
  }

  await waitFor(page, 'the answer played after the barge-in (200 ms more audible output)',
    `window.brisvoxDemo.audibleMs > ${flush.audibleMs} + 200`, 15000);
  await waitFor(page, 'turn metrics', () => window.brisvoxDemo.turnMetrics.length >= 1, 30000);
  check(await page.locator('#turns .bar .seg').count() > 0, 'a latency bar is drawn');
  // The bot's side: the greeting's and the answer's words, as sent to the voice.
  const botTexts = await page.evaluate(() => window.brisvoxDemo.botTexts);
  check(botTexts.some((t) => t.startsWith('Hello!')), `the greeting's words came as bot_text (${JSON.stringify(botTexts)})`);
  check(botTexts.length >= 2, `the answer's words came as bot_text too (${botTexts.length} texts)`);
  check((await page.textContent('#transcript')).includes('bot: '), 'the bot\'s words are on the page');
  // The cut greeting: bot_heard says what the caller heard of it, and its
  // line keeps those words and strikes through the rest.
  await waitFor(page, 'the greeting\'s bot_heard', () => window.brisvoxDemo.heard.length >= 1, 5000);
  const heard = await page.evaluate(() => window.brisvoxDemo.heard[0]);
  check(heard.turn === 0 && heard.sent.startsWith('Hello!') && heard.sent.startsWith(heard.heard) &&
    heard.heard.length < heard.sent.length, `the greeting's bot_heard has its heard part (${JSON.stringify(heard)})`);
  check(await page.locator('#transcript li.bot .unheard').count() >= 1,
    'the words of the greeting after the cut are struck through on the page');
  const answered = (await page.evaluate(() => window.brisvoxDemo.turnMetrics)).find((t) => t.waited_for);
  check(answered && (await page.textContent('#turns')).includes('waited for'),
    `the latency bar says what the turn waited for (${answered && answered.waited_for})`);
  const m = await page.evaluate(() => window.brisvoxDemo.turnMetrics[0]);
  check(typeof m.response_latency_ms === 'number' || typeof m.time_to_silence_ms === 'number',
    `turn_metrics has latencies (${JSON.stringify(m)})`);
  if (webrtc) await waitFor(page, 'the RTP counters', () => (window.brisvoxDemo.sentFrames > 100 && window.brisvoxDemo.rtp &&
    window.brisvoxDemo.rtp.packetsReceived > 0), 2000);
  const s = await page.evaluate(() => window.brisvoxDemo);
  check(s.sentFrames > 100, `the page sent microphone frames (${s.sentFrames})`);
  if (webrtc) check(s.rtp && s.rtp.packetsReceived > 50, `the bot's RTP packets arrived (${JSON.stringify(s.rtp)})`);
  check(s.errors.length === 0, `no page errors (${JSON.stringify(s.errors)})`);
  const shot = join(outDir, webrtc ? 'demo.png' : 'demo-websocket.png');
  await page.screenshot({ path: shot, fullPage: true });
  log('screenshot:', shot);
  await page.click('#toggle');
  await waitFor(page, 'the call ended', () => !window.brisvoxDemo.running, 5000);
  if (webrtc) {
    // `end` went out on the data channel and the server's `end` came back.
    const ended = await page.evaluate(() => window.brisvoxDemo.ended);
    check(ended === 'client_end', `the server ended the call as the page asked (${ended})`);
  }
}

// Starts `brisvox-bench lossy-proxy` (127.0.0.2:P -> 127.0.0.1:P for the
// loss ports, 5 % each way); resolves once it is ready. `finish()` closes its
// stdin and resolves with its counts line.
function startProxy() {
  const child = spawn(benchBin, ['lossy-proxy', '--front-ip', '127.0.0.2', '--server-ip', '127.0.0.1',
    '--ports', lossPorts.join('-'), '--loss-percent', String(LOSS_PERCENT), '--seed', '5'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let seen = '';
  const exited = new Promise((r) => child.on('exit', r));
  const ready = new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error('the lossy proxy was not ready in 10 s:\n' + seen)), 10000);
    const onData = (d) => {
      seen += d.toString();
      if (seen.includes('lossy-proxy: ready')) { clearTimeout(timer); resolvePromise(); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (e) => { clearTimeout(timer); reject(new Error(`could not start ${benchBin}: ${e.message}`)); });
    exited.then((code) => { clearTimeout(timer); reject(new Error(`the lossy proxy exited (${code}):\n${seen}`)); });
  });
  const finish = async () => { child.stdin.end(); await exited; return seen; };
  return { child, ready, finish };
}

// A call over WebRTC through the lossy proxy, on a server of its own that
// announces 127.0.0.2: it connects over WebRTC (no fallback), the caller's
// turn is transcribed and answered audibly, and datagrams were dropped both
// ways. (The barge-in's bounds are the lossless call's: a `clear` lost on
// the way is resent by SCTP a second later.)
async function lossyCall(page) {
  const agentFile = join(outDir, 'agent-loss.toml');
  const base = readFileSync(process.env.AGENT_FILE || join(here, 'agent.toml'), 'utf8');
  writeFileSync(agentFile, base + '\n[server.webrtc]\nudp_ip = "127.0.0.1"\npublic_ip = "127.0.0.2"\n' +
    `udp_ports = [${lossPorts[0]}, ${lossPorts[1]}]\n`);
  const proxy = startProxy();
  const { server: lossServer, ready: lossReady } = startServer(agentFile);
  extraChildren.push(proxy.child, lossServer.child);
  try {
    await proxy.ready;
    await lossReady;
    log('loss server at', lossServer.addr, 'behind the lossy proxy on 127.0.0.2');
    await page.goto(`http://${lossServer.addr}/`);
    await page.click('#toggle');
    await waitFor(page, 'the started event', () => window.brisvoxDemo.started !== null, 15000);
    const on = await page.evaluate(() => ({ transport: window.brisvoxDemo.transport, fallback: window.brisvoxDemo.fallback }));
    check(on.transport === 'webrtc', `the call is on WebRTC through the lossy proxy (${JSON.stringify(on)})`);
    await waitFor(page, 'bot audio played (100 ms audible at the worklet output)',
      () => window.brisvoxDemo.audibleMs > 100, 15000);
    await waitFor(page, 'a final transcript', () => window.brisvoxDemo.transcripts.length >= 1, 20000);
    check((await page.textContent('#transcript')).includes('you: '), 'the final transcript is on the page');
    const heardAtFinal = await page.evaluate(() => window.brisvoxDemo.audibleMs);
    await waitFor(page, 'the answer played (300 ms more audible output after the final transcript)',
      `window.brisvoxDemo.audibleMs > ${heardAtFinal} + 300`, 20000);
    await waitFor(page, 'turn metrics', () => window.brisvoxDemo.turnMetrics.length >= 1, 20000);
    await waitFor(page, 'the RTP counters', () => window.brisvoxDemo.rtp && window.brisvoxDemo.rtp.packetsReceived > 50, 5000);
    const s = await page.evaluate(() => window.brisvoxDemo);
    log('rtp through the lossy proxy:', JSON.stringify(s.rtp));
    check(s.errors.length === 0, `no page errors (${JSON.stringify(s.errors)})`);
    await page.screenshot({ path: join(outDir, 'demo-webrtc-loss.png'), fullPage: true });
    await page.click('#toggle');
    await waitFor(page, 'the call ended', () => !window.brisvoxDemo.running, 5000);
  } finally {
    await stopServer(lossServer);
    const counts = await proxy.finish();
    const m = counts.match(/to the server (\d+) forwarded (\d+) dropped; to the client (\d+) forwarded (\d+) dropped/);
    check(m && Number(m[2]) > 0 && Number(m[4]) > 0 && Number(m[1]) > 200 && Number(m[3]) > 200,
      `the proxy forwarded and dropped datagrams both ways (${m ? m[0] : counts})`);
    check(lossServer.child.exitCode === 0, `the loss server stopped cleanly on SIGTERM (${lossServer.child.signalCode || lossServer.child.exitCode})`);
  }
}

const userDir = mkdtempSync(join(tmpdir(), 'brisvox-chromium-'));
const wav = join(outDir, 'fake-mic.wav');
fakeMicWav(wav);
const { server, ready } = startServer();
// Whatever ends this process (an exception, timeout's SIGTERM, ^C), the server
// and the profile directory go with it.
// The loss call's server and proxy.
const extraChildren = [];
const cleanupSync = () => {
  for (const c of [server.child, ...extraChildren]) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
  rmSync(userDir, { recursive: true, force: true });
};
process.on('exit', cleanupSync);
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(sig, () => { console.error(`killed by ${sig}; server log (tail):\n${tail(server.logs())}`); process.exit(2); });
}

let browser;
try {
  await ready;
  log('server at', server.addr);
  browser = await chromium.launchPersistentContext(userDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    timeout: 60000,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`, '--autoplay-policy=no-user-gesture-required',
      // The server's ICE-lite candidate is 127.0.0.1 (the page is loaded from
      // there). Chromium leaves loopback out of its own candidates unless
      // told; without this the WebRTC call never connected here (the page
      // fell back to the websocket after 5 s).
      '--allow-loopback-in-peer-connection',
    ],
    viewport: { width: 1000, height: 900 },
  });
  const page = browser.pages()[0] || await browser.newPage();
  page.setDefaultTimeout(15000);
  page.on('console', (m) => log('page console:', m.text()));
  page.on('pageerror', (e) => failures.push(prefix + 'page error: ' + e.message));
  for (const transport of transports) {
    prefix = `[${transport}] `;
    log(`--- a call over ${transport}`);
    if (transport === 'webrtc-loss') await lossyCall(page);
    else await oneCall(page, transport, server);
  }
  prefix = '';
} catch (e) {
  failures.push(String((e && e.stack) || e));
} finally {
  if (browser) await browser.close().catch(() => {});
  await stopServer(server);
}
check(server.child.signalCode === null && server.child.exitCode === 0,
  `the server stopped cleanly on SIGTERM (${server.child.signalCode || server.child.exitCode})`);
if (failures.length) {
  console.error('FAILED:\n' + failures.join('\n'));
  console.error('server log (tail):\n' + tail(server.logs()));
  process.exit(1);
}
log('PASSED');
