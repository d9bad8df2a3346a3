// brisvox demo page: microphone -> the call -> speaker, with the live
// transcript and a latency bar per turn. No build step, no dependencies.
//
// Two transports, one event handler (onEvent):
// - WebRTC (the default): an RTCPeerConnection with the microphone's track,
//   the offer posted to '/webrtc/offer', the bot's track played by an <audio>
//   element, the call's events and controls on a data channel.
// - the websocket '/call' (PCM16 at 16 kHz both ways): when the browser has
//   no RTCPeerConnection, when the WebRTC call cannot be set up (the offer is
//   refused, or the connection does not open in CONNECT_TIMEOUT_MS), or when
//   the page is opened with ?transport=ws.
(function () {
  'use strict';
  const RATE = 16000;          // the websocket call's rate both ways
  const PREBUFFER_MS = 80;     // jitter buffer before playback starts (websocket)
  const EVENT_LOG_MAX = 500;   // events kept in state.eventLog
  const CONNECT_TIMEOUT_MS = 5000; // WebRTC: the data channel must open within this
  const STATS_EVERY_MS = 500;  // WebRTC: how often the RTP counters are read
  const END_WAIT_MS = 1000;    // WebRTC: how long Stop waits for the server's `end`

  const $ = (id) => document.getElementById(id);
  // State the browser test reads.
  const state = window.brisvoxDemo = {
    running: false, started: null, mock: null,
    transport: null, // 'webrtc' or 'websocket', once the call is up
    fallback: null,  // why the websocket is used although WebRTC was wanted
    rtp: null,       // WebRTC: the audio track's RTP counters (getStats)
    playedSamples: 0, bufferedSamples: 0, receivedSamples: 0, audibleMs: 0,
    sentFrames: 0, clears: 0, flushes: [], transcripts: [], interim: '', turnMetrics: [],
    botTexts: [], noText: [], // the bot's words as sent to its voice; turns that produced no text
    heard: [], // bot_heard events: what the caller heard of each cut response
    eventLog: [], // the first EVENT_LOG_MAX events, each with the playback counters at its arrival
    botSpeaking: false, ended: null, errors: [],
  };
  let ws = null, ctx = null, stream = null, capture = null, playback = null, source = null;
  let pc = null, dc = null, remoteAudio = null, remoteSource = null, remoteGate = null, statsTimer = null;
  let stopping = false, endSeen = null; // stop() in progress; what it waits for
  let botLine = null; // the transcript line of the bot's current response
  const botLines = new Map(); // turn -> the transcript line of that response

  function setStatus(s) { $('status').textContent = s; }

  // The page's own ?token=, passed on to the call's route.
  function tokenQuery() {
    const token = new URLSearchParams(location.search).get('token');
    return token ? '?token=' + encodeURIComponent(token) : '';
  }

  function wsUrl() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return proto + '//' + location.host + '/call' + tokenQuery();
  }

  function newCallId() { return 'demo-' + Date.now().toString(36); }
  const METADATA = { client: 'brisvox-demo-page' };

  function webrtcWanted() {
    return typeof RTCPeerConnection === 'function' &&
      new URLSearchParams(location.search).get('transport') !== 'ws';
  }

  function showTransport() {
    const el = $('transport');
    if (state.transport === 'webrtc') el.textContent = 'WebRTC (Opus over UDP)';
    else el.textContent = 'websocket (PCM16 over TCP)' + (state.fallback ? ': fallback, ' + state.fallback : '');
    el.hidden = false;
  }

  function addLine(text, cls) {
    const li = document.createElement('li');
    li.textContent = text;
    if (cls) li.className = cls;
    const list = $('transcript');
    list.appendChild(li);
    list.scrollTop = list.scrollHeight;
    return li;
  }

  // The bot's words of one response go on one line, as they reach its voice.
  function addBotText(turn, text) {
    state.botTexts.push(text);
    if (!botLine || botLine.dataset.turn !== String(turn)) {
      botLine = addLine('bot: ', 'bot');
      botLine.dataset.turn = String(turn);
      botLines.set(turn, botLine);
    }
    botLine.textContent += (botLine.textContent.endsWith(': ') ? '' : ' ') + text;
    $('transcript').scrollTop = $('transcript').scrollHeight;
  }

  // A cut response: its line shows the words the caller heard, then the
  // words it did not hear struck through.
  function showHeard(ev) {
    state.heard.push(ev);
    const line = botLines.get(ev.turn);
    if (!line) return;
    const unheard = ev.sent.startsWith(ev.heard) ? ev.sent.slice(ev.heard.length).trim() : '';
    line.textContent = 'bot: ' + ev.heard;
    if (unheard) {
      const cut = document.createElement('span');
      cut.className = 'unheard';
      cut.title = 'not heard: the caller talked over it';
      cut.textContent = ' ' + unheard;
      line.appendChild(cut);
    }
  }

  const NO_TEXT = {
    empty_transcript: 'nothing recognised',
    stt_error: 'the STT failed',
    final_timeout: 'the STT final came too late',
  };

  // The playback worklet; `fromTrack`: it meters the WebRTC track instead
  // of playing queued websocket audio (playback-worklet.js).
  function makePlayback(fromTrack) {
    if (playback) { playback.port.onmessage = null; playback.disconnect(); }
    playback = new AudioWorkletNode(ctx, 'brisvox-playback', {
      numberOfInputs: fromTrack ? 1 : 0, outputChannelCount: [1],
      processorOptions: { inRate: RATE, prebufferMs: PREBUFFER_MS, source: fromTrack ? 'input' : 'queue' },
    });
    playback.port.onmessage = (e) => {
      state.playedSamples = e.data.played;
      state.bufferedSamples = e.data.buffered;
      state.audibleMs = e.data.audibleMs;
      if (typeof e.data.dropped === 'number') {
        state.flushes.push({
          dropped: e.data.dropped, bufferedAfter: e.data.buffered, played: e.data.played,
          audibleMs: e.data.audibleMs, wasPlaying: e.data.wasPlaying, sinceAudibleMs: e.data.sinceAudibleMs,
        });
      }
      $('played').textContent = Math.round(e.data.played / (RATE / 1000));
      $('buffered').textContent = Math.round(e.data.buffered / (RATE / 1000));
    };
    if (fromTrack) {
      // The <audio> element plays the track (where the browser's echo
      // canceller hears it); the meter's copy goes out silent.
      const mute = ctx.createGain();
      mute.gain.value = 0;
      playback.connect(mute).connect(ctx.destination);
    } else {
      playback.connect(ctx.destination);
    }
  }

  async function start() {
    $('toggle').disabled = true;
    setStatus('asking for the microphone…');
    try {
      stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
      });
      ctx = new AudioContext();
      await ctx.audioWorklet.addModule('/demo/capture-worklet.js');
      await ctx.audioWorklet.addModule('/demo/playback-worklet.js');
      await ctx.resume();
      if (webrtcWanted()) {
        try {
          await openPeer();
          return;
        } catch (err) {
          state.fallback = String((err && err.message) || err);
          closePeer();
          if (!stream) return; // stopped meanwhile
        }
      } else if (typeof RTCPeerConnection !== 'function') {
        state.fallback = 'this browser has no WebRTC';
      }
      openSocket();
    } catch (err) {
      state.errors.push(String(err));
      setStatus('could not start: ' + err);
      await stop();
    }
  }

  function markRunning() {
    state.running = true;
    showTransport();
    $('toggle').textContent = 'Stop';
    $('toggle').classList.add('stop');
    $('toggle').disabled = false;
  }

  // The call over WebRTC; throws when it cannot be set up (the caller falls
  // back to the websocket).
  async function openPeer() {
    setStatus('connecting (WebRTC)…');
    pc = new RTCPeerConnection();
    stream.getAudioTracks().forEach((t) => pc.addTrack(t, stream));
    dc = pc.createDataChannel('brisvox');
    dc.onmessage = (e) => {
      if (typeof e.data !== 'string') return;
      const ev = JSON.parse(e.data);
      onEvent(ev);
      if (ev.type === 'end') closeCall(''); // the server closes its side next
    };
    let timer = null;
    const opened = new Promise((resolve, reject) => {
      dc.onopen = resolve;
      pc.onconnectionstatechange = () => { if (pc && pc.connectionState === 'failed') reject(new Error('the connection failed')); };
      timer = setTimeout(() => reject(new Error('not connected in ' + CONNECT_TIMEOUT_MS + ' ms')), CONNECT_TIMEOUT_MS);
    });
    opened.catch(() => {}); // awaited below; an earlier failure must not leave it unhandled
    pc.ontrack = (e) => playTrack(new MediaStream([e.track]));
    await pc.setLocalDescription(await pc.createOffer());
    // ICE-lite server: it needs none of our candidates, so no waiting for them.
    const res = await fetch('/webrtc/offer' + tokenQuery(), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'offer', sdp: pc.localDescription.sdp, call_id: newCallId(), metadata: METADATA }),
    });
    const answer = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error('the offer was refused (HTTP ' + res.status + (answer.code ? ', ' + answer.code : '') + ')');
    await pc.setRemoteDescription({ type: 'answer', sdp: answer.sdp });
    try { await opened; } finally { clearTimeout(timer); }
    dc.onclose = () => closeCall('');
    pc.onconnectionstatechange = () => {
      if (pc && (pc.connectionState === 'failed' || pc.connectionState === 'closed')) closeCall(', connection ' + pc.connectionState);
    };
    state.transport = 'webrtc';
    markRunning();
    // What /call's `started` event says, from the answer.
    onEvent({ type: 'started', call_id: answer.call_id, providers: answer.providers, mock: answer.mock });
    statsTimer = setInterval(readStats, STATS_EVERY_MS);
  }

  // The bot's track: played by an <audio> element, metered by the worklet
  // through a gate that is muted with the element (so the meter hears what
  // the caller hears).
  function playTrack(remote) {
    if (!ctx || remoteAudio) return;
    remoteAudio = new Audio();
    remoteAudio.srcObject = remote;
    remoteAudio.play().catch((err) => state.errors.push('playing the bot\'s track: ' + err));
    makePlayback(true);
    remoteSource = ctx.createMediaStreamSource(remote);
    remoteGate = ctx.createGain();
    remoteSource.connect(remoteGate).connect(playback);
  }

  // Barge-in on WebRTC: the server stops sending at once, but the browser's
  // jitter buffer still holds what it received (tens to hundreds of ms,
  // more on a jittery network), and no page can flush it. So the bot's track
  // is muted at `clear` until the next answer starts (`bot_speaking_started`):
  // what the buffer held plays out unheard.
  function muteTrack(muted) {
    if (remoteAudio) remoteAudio.muted = muted;
    if (remoteGate) remoteGate.gain.value = muted ? 0 : 1;
  }

  // The RTP counters of the audio track, both ways.
  async function readStats() {
    if (!pc) return;
    let report;
    try { report = await pc.getStats(); } catch (_) { return; }
    const rtp = {};
    report.forEach((s) => {
      if (s.kind !== 'audio') return;
      if (s.type === 'outbound-rtp') rtp.packetsSent = s.packetsSent;
      if (s.type === 'inbound-rtp') {
        rtp.packetsReceived = s.packetsReceived; rtp.packetsLost = s.packetsLost;
        rtp.concealedSamples = s.concealedSamples; rtp.totalSamplesReceived = s.totalSamplesReceived;
        rtp.jitterBufferMs = s.jitterBufferEmittedCount ? (1000 * s.jitterBufferDelay) / s.jitterBufferEmittedCount : null;
      }
    });
    state.rtp = rtp;
    if (typeof rtp.packetsSent === 'number') {
      state.sentFrames = rtp.packetsSent; // one 20 ms Opus frame a packet
      $('sent').textContent = state.sentFrames;
    }
  }

  function closePeer() {
    if (statsTimer) { clearInterval(statsTimer); statsTimer = null; }
    if (remoteSource) { remoteSource.disconnect(); remoteSource = null; }
    if (remoteGate) { remoteGate.disconnect(); remoteGate = null; }
    if (remoteAudio) { remoteAudio.srcObject = null; remoteAudio = null; }
    if (dc) { dc.onopen = dc.onclose = dc.onmessage = null; dc = null; }
    if (pc) { pc.onconnectionstatechange = pc.ontrack = null; pc.close(); pc = null; }
  }

  // The call is over (the server ended it, or the connection went).
  function closeCall(detail) {
    setStatus('call ended' + (state.ended ? ' (' + state.ended + ')' : '') + detail);
    ws = null;
    if (endSeen) endSeen(); // stop() waits for it
    else if (state.running) stop();
  }

  function openSocket() {
    setStatus('connecting…');
    makePlayback(false);
    source = ctx.createMediaStreamSource(stream);
    capture = new AudioWorkletNode(ctx, 'brisvox-capture', { numberOfOutputs: 0 });
    capture.port.onmessage = (e) => {
      if (ws && ws.readyState === WebSocket.OPEN && state.started) {
        ws.send(e.data);
        state.sentFrames++;
        if (state.sentFrames % 25 === 0) $('sent').textContent = state.sentFrames;
      }
    };
    source.connect(capture);
    ws = new WebSocket(wsUrl());
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => {
      ws.send(JSON.stringify({
        type: 'start', protocol_version: 1, codec: 'pcm16', sample_rate: RATE,
        call_id: newCallId(), metadata: METADATA,
      }));
    };
    ws.onmessage = (e) => {
      if (typeof e.data === 'string') onEvent(JSON.parse(e.data));
      else onAudio(e.data);
    };
    ws.onclose = (e) => closeCall(e.code !== 1000 ? ', close ' + e.code : '');
    ws.onerror = () => state.errors.push('websocket error');
    state.transport = 'websocket';
    markRunning();
  }

  function onAudio(buf) {
    // Copy: the worklet owns its message; the bytes are PCM16 little-endian.
    const samples = new Int16Array(buf.slice(0));
    state.receivedSamples += samples.length;
    if (playback) playback.port.postMessage({ type: 'audio', samples }, [samples.buffer]);
  }

  function onEvent(ev) {
    if (state.eventLog.length < EVENT_LOG_MAX) {
      state.eventLog.push({
        type: ev.type, final: ev.final, interrupted: ev.interrupted, atMs: performance.now(), botSpeaking: state.botSpeaking,
        received: state.receivedSamples, played: state.playedSamples, audibleMs: state.audibleMs,
      });
    }
    switch (ev.type) {
      case 'started': {
        state.started = ev; state.mock = !!ev.mock;
        setStatus('in a call: speak');
        const p = ev.providers || {};
        $('providers').hidden = false;
        $('providers').textContent = 'providers: STT ' + p.stt + ', LLM ' + p.llm + ', TTS ' + p.tts;
        if (ev.mock) {
          $('mock').hidden = false;
          const what = {
            stt: 'the STT is a mock (no speech recognition: it invents transcripts)',
            llm: 'the LLM is a mock (canned answers)',
            tts: 'the TTS is a mock (tones, not a voice)',
          };
          const mocks = ['stt', 'llm', 'tts'].filter((k) => p[k] === 'mock').map((k) => what[k]);
          $('mock-text').textContent = 'On this server ' + mocks.join('; ') + '. A test, not a product.';
        }
        break;
      }
      case 'transcript':
        if (ev.final) {
          state.transcripts.push(ev.text); state.interim = '';
          $('interim').textContent = '';
          if (ev.text) { botLine = null; addLine('you: ' + ev.text, 'you'); }
        } else {
          state.interim = ev.text; $('interim').textContent = ev.text;
        }
        break;
      case 'bot_speaking_started':
        muteTrack(false);
        state.botSpeaking = true; $('speaking').hidden = false; break;
      case 'bot_speaking_stopped':
        state.botSpeaking = false; $('speaking').hidden = true;
        if (ev.interrupted) {
          addLine('(bot interrupted: the words struck through were not heard)', 'event');
        }
        botLine = null;
        break;
      case 'bot_text':
        addBotText(ev.turn, ev.text); break;
      case 'bot_heard':
        showHeard(ev); break;
      case 'turn_no_text':
        state.noText.push(ev);
        botLine = null;
        addLine('(turn ' + ev.turn + ': ' + Math.round(ev.speech_ms) + ' ms of speech, no words: ' +
          (NO_TEXT[ev.reason] || ev.reason) + (ev.replied ? '; the bot says it did not catch that)' : ')'), 'event');
        break;
      case 'clear':
        state.clears++; $('clears').textContent = state.clears;
        muteTrack(true);
        if (playback) playback.port.postMessage({ type: 'clear' });
        addLine('(barge-in: playback cleared)', 'event');
        break;
      case 'turn_metrics':
        state.turnMetrics.push(ev); drawTurn(ev); break;
      case 'error':
        state.errors.push(ev.code + ': ' + ev.message);
        addLine('error ' + ev.code + ': ' + ev.message, 'event');
        break;
      case 'end':
        state.ended = ev.reason; break;
      default: break;
    }
  }

  const WAITED = { stt_final: 'the STT final', turn_model: 'the end-of-turn model', timeout: 'a timeout' };

  // One bar per turn. Positions are ms from the end of the caller's speech:
  // the turn-end decision, then the LLM's first token (after the request made
  // at the decision), then the TTS's first byte, then the first audio out.
  // The STT final and the end-of-turn verdict are markers on the same axis;
  // the label says which of them the turn end waited for.
  function drawTurn(m) {
    const num = (v) => (typeof v === 'number' ? v : null);
    const eot = num(m.end_of_turn_delay_ms), stt = num(m.stt_final_delay_ms);
    const llm = num(m.llm_ttft_ms), tts = num(m.tts_ttfb_ms), resp = num(m.response_latency_ms);
    const verdict = num(m.turn_verdict_delay_ms);
    const segs = [];
    let t = 0;
    if (eot !== null) { segs.push(['eot', 0, eot]); t = eot; }
    if (llm !== null) { segs.push(['llm', t, t + llm]); t += llm; }
    if (tts !== null) { segs.push(['tts', t, t + tts]); t += tts; }
    if (resp !== null && resp > t) { segs.push(['out', t, resp]); t = resp; }
    const total = Math.max(t, stt || 0, verdict || 0, resp || 0, 1);
    const scale = Math.max(total, 1500);
    const li = document.createElement('li');
    const label = document.createElement('div');
    label.className = 'label';
    const part = (name, v) => (v === null ? '' : name + ' ' + Math.round(v) + ' ms · ');
    const waited = m.waited_for ? 'waited for ' + (WAITED[m.waited_for] || m.waited_for) + ' · ' : '';
    label.textContent = 'turn ' + m.turn + ': ' + waited + part('STT final', stt) +
      part('end-of-turn verdict', verdict) + part('end of turn', eot) +
      part('LLM TTFT', llm) + part('TTS TTFB', tts) + part('first audio', resp) +
      (num(m.time_to_silence_ms) !== null ? 'silence after barge-in ' + Math.round(m.time_to_silence_ms) + ' ms' : '');
    label.textContent = label.textContent.replace(/ · $/, '');
    const bar = document.createElement('div');
    bar.className = 'bar';
    for (const [cls, a, b] of segs) {
      const d = document.createElement('div');
      d.className = 'seg ' + cls;
      d.style.left = (100 * a / scale) + '%';
      d.style.width = (100 * Math.max(0, b - a) / scale) + '%';
      d.title = cls + ' ' + Math.round(b - a) + ' ms';
      bar.appendChild(d);
    }
    const marker = (cls, at, title) => {
      const mk = document.createElement('div');
      mk.className = cls; mk.style.left = (100 * at / scale) + '%'; mk.title = title + ' ' + Math.round(at) + ' ms';
      bar.appendChild(mk);
    };
    if (stt !== null) marker('mark' + (m.waited_for === 'stt_final' ? ' waited' : ''), stt, 'STT final');
    if (verdict !== null) marker('mark verdict' + (m.waited_for === 'turn_model' ? ' waited' : ''), verdict, 'end-of-turn verdict');
    li.appendChild(label); li.appendChild(bar);
    $('turns').prepend(li);
  }

  // Sends a control (`end`, `say`, `dtmf`) on whichever transport is up.
  function sendControl(msg) {
    const text = JSON.stringify(msg);
    try {
      if (ws && ws.readyState === WebSocket.OPEN) ws.send(text);
      else if (dc && dc.readyState === 'open') dc.send(text);
      else return false;
    } catch (_) { return false; /* closing */ }
    return true;
  }

  async function stop() {
    if (stopping) return;
    stopping = true;
    if (!state.ended && sendControl({ type: 'end', reason: 'user pressed stop' }) && dc) {
      // Let the data channel deliver `end`: wait for the server's `end`
      // (or the channel's close), at most END_WAIT_MS.
      await new Promise((resolve) => {
        const t = setTimeout(resolve, END_WAIT_MS);
        endSeen = () => { clearTimeout(t); resolve(); };
      });
      endSeen = null;
    }
    closePeer();
    if (source) { source.disconnect(); source = null; }
    if (capture) { capture.port.onmessage = null; capture.disconnect(); capture = null; }
    if (playback) { playback.disconnect(); playback = null; }
    if (stream) { stream.getTracks().forEach((t) => t.stop()); stream = null; }
    if (ctx) { const c = ctx; ctx = null; try { await c.close(); } catch (_) { /* closed */ } }
    state.running = false; state.botSpeaking = false;
    $('speaking').hidden = true;
    $('toggle').textContent = 'Start';
    $('toggle').classList.remove('stop');
    $('toggle').disabled = false;
    stopping = false;
  }

  $('toggle').addEventListener('click', () => {
    if (state.running) { setStatus('ending…'); stop(); }
    else {
      state.started = null; state.ended = null;
      start();
    }
  });
})();
