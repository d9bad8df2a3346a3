// Bot audio playback: a small jitter buffer (websocket), or a meter on the
// WebRTC track (the browser plays that one itself).
//
// `processorOptions.source`:
// - 'queue' (the default; the websocket call): the page posts
//   {type:'audio', samples: Int16Array at inRate}. Playback starts once
//   `prebufferMs` of audio is queued (and again after an underrun); a
//   {type:'clear'} message drops everything queued at once (barge-in).
// - 'input' (the WebRTC call): the node's input is the remote audio track; it
//   is copied to the output as it is. The browser's own jitter buffer holds
//   what has not played yet, so a clear has nothing of ours to drop.
// Either way, every ~50 ms the processor reports {played, buffered} in input
// samples (at inRate) and `audibleMs`, how much of its output so far was
// audible (|sample| >= 1/1024, about -60 dBFS): proof that sound came out,
// not just that bytes arrived. The report that answers a clear also carries
// `dropped` (samples thrown away), `wasPlaying` and `sinceAudibleMs` (ms since
// the last audible output sample, null if none yet).
const AUDIBLE = 1 / 1024;
class PlaybackProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const o = (options && options.processorOptions) || {};
    this.fromInput = o.source === 'input';
    this.inRate = o.inRate || 16000;
    this.prebuffer = Math.round(((o.prebufferMs || 80) * this.inRate) / 1000);
    this.step = this.inRate / sampleRate; // input samples per output sample
    this.queue = [];      // Float32Array chunks at inRate
    this.queued = 0;      // samples in queue (from the head chunk's offset)
    this.offset = 0;      // read position inside queue[0], fractional
    this.playing = false;
    this.played = 0;      // input samples played since start
    this.sinceReport = 0;
    this.audible = 0;     // output samples at or above AUDIBLE
    this.lastAudible = -1; // output frame index of the last audible sample
    this.port.onmessage = (e) => this.onMessage(e.data);
  }

  onMessage(msg) {
    if (msg.type === 'audio' && !this.fromInput) {
      const src = msg.samples;
      const f = new Float32Array(src.length);
      for (let i = 0; i < src.length; i++) f[i] = src[i] / 32768;
      this.queue.push(f);
      this.queued += f.length;
    } else if (msg.type === 'clear') {
      const dropped = Math.max(0, this.queued - Math.floor(this.offset));
      const wasPlaying = this.playing;
      this.queue = [];
      this.queued = 0;
      this.offset = 0;
      this.playing = false;
      this.report({ dropped, wasPlaying });
    }
  }

  sampleAt(k) { // k-th sample from the read head, walking chunks
    let idx = 0;
    while (idx < this.queue.length) {
      const c = this.queue[idx];
      if (k < c.length) return c[k];
      k -= c.length;
      idx++;
    }
    return 0;
  }

  // Fills `out` from the queue; returns the input samples consumed.
  playQueue(out) {
    if (!this.playing && this.queued >= this.prebuffer) this.playing = true;
    let consumed = 0;
    for (let i = 0; i < out.length; i++) {
      if (!this.playing || this.queued - Math.floor(this.offset) < 2) {
        out[i] = 0;
        if (this.playing) this.playing = false; // underrun: buffer again
        continue;
      }
      const base = Math.floor(this.offset);
      const frac = this.offset - base;
      const a = this.sampleAt(base);
      const b = this.sampleAt(base + 1);
      out[i] = a + (b - a) * frac;
      this.offset += this.step;
      // Drop whole chunks that the read head has passed.
      while (this.queue.length && Math.floor(this.offset) >= this.queue[0].length) {
        const len = this.queue[0].length;
        this.queue.shift();
        this.offset -= len;
        this.queued -= len;
        consumed += len;
      }
    }
    return consumed;
  }

  // Copies the input (the WebRTC track) to `out`; returns the samples it
  // stands for at inRate.
  playInput(inputs, out) {
    const ch = inputs[0] && inputs[0][0];
    if (ch) out.set(ch); else out.fill(0);
    return out.length * this.step;
  }

  process(inputs, outputs) {
    const out = outputs[0][0];
    const consumed = this.fromInput ? this.playInput(inputs, out) : this.playQueue(out);
    let audibleHere = false;
    for (let i = 0; i < out.length; i++) {
      if (out[i] >= AUDIBLE || out[i] <= -AUDIBLE) {
        this.audible++; this.lastAudible = currentFrame + i; audibleHere = true;
      }
    }
    if (this.fromInput) this.playing = audibleHere;
    for (let c = 1; c < outputs[0].length; c++) outputs[0][c].set(out);
    this.played += consumed;
    this.sinceReport += out.length;
    if (this.sinceReport >= sampleRate / 20) this.report();
    return true;
  }

  report(flush) {
    this.sinceReport = 0;
    const buffered = Math.max(0, this.queued - Math.floor(this.offset));
    const msg = { played: Math.round(this.played), buffered, audibleMs: (1000 * this.audible) / sampleRate };
    if (flush) {
      msg.dropped = flush.dropped;
      msg.wasPlaying = flush.wasPlaying;
      msg.sinceAudibleMs = this.lastAudible < 0 ? null : (1000 * (currentFrame - this.lastAudible)) / sampleRate;
    }
    this.port.postMessage(msg);
  }
}

registerProcessor('brisvox-playback', PlaybackProcessor);
