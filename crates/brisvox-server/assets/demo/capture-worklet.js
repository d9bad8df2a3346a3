// Microphone capture: resamples the context's rate to 16 kHz mono and posts
// PCM16 frames of 20 ms (320 samples) to the page as transferable buffers.
const OUT_RATE = 16000;
const FRAME = 320;

class CaptureProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / OUT_RATE; // input samples per output sample
    this.pos = 0;                      // position of the next output sample, in input samples
    this.prev = 0;                     // last (filtered) input sample of the previous block
    this.lp = 0;                       // one-pole low-pass state (anti-aliasing)
    this.alpha = Math.min(1, (2 * Math.PI * 7000) / sampleRate);
    this.frame = new Int16Array(FRAME);
    this.fill = 0;
  }

  process(inputs) {
    const input = inputs[0];
    if (!input || input.length === 0) return true;
    const ch = input[0];
    const n = ch.length;
    const filtered = new Float32Array(n);
    let lp = this.lp;
    for (let i = 0; i < n; i++) { lp += this.alpha * (ch[i] - lp); filtered[i] = lp; }
    this.lp = lp;
    // Linear interpolation between sample pos-1 (prev, index -1) and the block.
    while (this.pos < n - 1 + 1e-9) {
      const i = Math.floor(this.pos);
      const frac = this.pos - i;
      const a = i < 0 ? this.prev : filtered[i];
      const b = filtered[Math.min(i + 1, n - 1)];
      const v = a + (b - a) * frac;
      const s = Math.max(-1, Math.min(1, v));
      this.frame[this.fill++] = s < 0 ? s * 0x8000 : s * 0x7fff;
      if (this.fill === FRAME) {
        const out = this.frame.buffer;
        this.port.postMessage(out, [out]);
        this.frame = new Int16Array(FRAME);
        this.fill = 0;
      }
      this.pos += this.step;
    }
    this.prev = filtered[n - 1];
    this.pos -= n;
    return true;
  }
}

registerProcessor('brisvox-capture', CaptureProcessor);
