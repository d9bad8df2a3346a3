#!/usr/bin/env python3
"""The Pipecat peer of brisvox: a Pipecat 1.14.0 bot that speaks the brisvox
websocket protocol v1 (docs/WEBSOCKET_PROTOCOL.md), over mock STT/LLM/TTS
services with the latencies and chunk shapes of brisvox's mock providers.

Pipeline (one per websocket connection):

    transport.input -> MockSTT -> user aggregator (VAD + turn stop strategy)
      -> MockLLM -> MockTTS -> transport.output -> assistant aggregator

With the models (default): Pipecat's Silero VAD and Smart Turn v3.2
(LocalSmartTurnAnalyzerV3), both shipped in the pipecat-ai wheel. With
--no-models: an energy VAD and a turn analyzer that always answers "complete"
(the framework cost alone).

Run it from the repository root after bench/pipecat_baseline/install.sh:

    bench/pipecat_baseline/.venv/bin/python bench/pipecat_baseline/bot.py --port 8765

README.md next to this file has the settings table and the known differences.
"""

import argparse
import asyncio
import json
import math
import os
import struct
import sys
import time

from loguru import logger

# The settings travel to uvicorn worker processes in this variable (--workers N).
CONFIG_ENV = "BRISVOX_PIPECAT_PEER_CONFIG"
# BRISVOX_PEER_COUNT=1: count what each call's analyzers did (audit; see count_work()).
COUNT_ENV = "BRISVOX_PEER_COUNT"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default 1)")
    p.add_argument("--no-models", action="store_true",
                   help="energy VAD and a fixed 'complete' turn verdict instead of Silero and Smart Turn")
    p.add_argument("--vad-stop-ms", type=float, default=128.0,
                   help="VAD stop_secs in ms; Pipecat counts round(stop / 32 ms) Silero windows. "
                        "128 = 4 windows = brisvox VadParams::default (min_silence 100 ms)")
    p.add_argument("--vad-start-ms", type=float, default=64.0,
                   help="VAD start_secs in ms (brisvox min_speech 64 ms = 2 windows)")
    p.add_argument("--vad-confidence", type=float, default=0.5,
                   help="speech probability threshold (brisvox positive_threshold 0.5; Pipecat default 0.7)")
    p.add_argument("--energy-threshold-dbfs", type=float, default=-40.0,
                   help="--no-models: RMS level that counts as speech")
    p.add_argument("--stt-final-ms", type=float, default=150.0, help="final transcript after the VAD stop")
    p.add_argument("--llm-first-token-ms", type=float, default=350.0)
    p.add_argument("--llm-token-interval-ms", type=float, default=30.0)
    p.add_argument("--answer", default="Okay, got it.", help="the LLM's answer, one word per token")
    p.add_argument("--tts-first-audio-ms", type=float, default=150.0)
    p.add_argument("--tts-chunk-ms", type=float, default=40.0, help="audio per TTS chunk")
    p.add_argument("--tts-chunk-interval-ms", type=float, default=20.0, help="time between TTS chunks")
    p.add_argument("--tts-ms-per-char", type=float, default=60.0, help="audio length per character")
    p.add_argument("--tts-rate", type=int, default=24000, help="TTS output rate, Hz")
    p.add_argument("--log-level", default="WARNING")
    return p.parse_args(argv)


def load_config():
    raw = os.environ.get(CONFIG_ENV)
    if raw:
        return argparse.Namespace(**json.loads(raw))
    return parse_args([])


CFG = load_config()
logger.remove()
logger.add(sys.stderr, level=CFG.log_level)

# Imported after the logger is configured: Pipecat logs at import time.
from fastapi import FastAPI, WebSocket  # noqa: E402
from pipecat.audio.turn.base_turn_analyzer import BaseTurnAnalyzer, BaseTurnParams, EndOfTurnState  # noqa: E402
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams  # noqa: E402
from pipecat.frames.frames import (  # noqa: E402
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    OutputTransportMessageFrame,
    OutputTransportMessageUrgentFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.pipeline.worker import PipelineParams, PipelineWorker  # noqa: E402
from pipecat.processors.aggregators.llm_context import LLMContext  # noqa: E402
from pipecat.processors.aggregators.llm_response_universal import (  # noqa: E402
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.processors.frame_processor import FrameDirection  # noqa: E402
from pipecat.serializers.base_serializer import FrameSerializer  # noqa: E402
from pipecat.services.llm_service import LLMService  # noqa: E402
from pipecat.services.settings import LLMSettings, STTSettings, TTSSettings  # noqa: E402
from pipecat.services.stt_service import STTService  # noqa: E402
from pipecat.services.tts_service import TTSService  # noqa: E402
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport  # noqa: E402
from pipecat.turns.user_stop.turn_analyzer_user_turn_stop_strategy import (  # noqa: E402
    TurnAnalyzerUserTurnStopStrategy,
)
from pipecat.turns.user_turn_strategies import UserTurnStrategies  # noqa: E402
from pipecat.utils.time import time_now_iso8601  # noqa: E402
from pipecat.workers.runner import WorkerRunner  # noqa: E402

SUPPORTED_RATES = (8000, 16000, 24000, 48000)


def settings_without_values(cls, **given):
    """A service settings object with every field None (a mock has no model,
    voice or language), so Pipecat does not log each missing field per call."""
    import dataclasses

    values = {f.name: None for f in dataclasses.fields(cls) if f.name != "extra"}
    values.update(given)
    return cls(**values)


class BrisvoxProtocolSerializer(FrameSerializer):
    """brisvox protocol v1 after the start/started handshake (done by the endpoint):
    binary PCM16 in -> InputAudioRawFrame; bot audio -> binary; an interruption ->
    {"type":"clear"}; transport messages -> their JSON; the client's `end` -> the
    on_end callback (the endpoint answers and ends the pipeline)."""

    def __init__(self, sample_rate: int):
        super().__init__()
        self._rate = sample_rate
        self.on_end = None

    async def serialize(self, frame: Frame):
        if self.should_ignore_frame(frame):
            return None
        if isinstance(frame, OutputAudioRawFrame):
            return frame.audio
        if isinstance(frame, InterruptionFrame):
            return '{"type":"clear"}'
        if isinstance(frame, (OutputTransportMessageFrame, OutputTransportMessageUrgentFrame)):
            return json.dumps(frame.message)
        return None

    async def deserialize(self, data):
        if isinstance(data, (bytes, bytearray)):
            return InputAudioRawFrame(audio=bytes(data), sample_rate=self._rate, num_channels=1)
        try:
            msg = json.loads(data)
        except ValueError:
            return None
        if isinstance(msg, dict) and msg.get("type") == "end" and self.on_end:
            await self.on_end()
        return None


class EnergyVADAnalyzer(VADAnalyzer):
    """--no-models: speech when the RMS of a 32 ms window is above a level."""

    def __init__(self, *, threshold_dbfs: float, params: VADParams):
        super().__init__(params=params)
        self._threshold = 32768.0 * 10 ** (threshold_dbfs / 20.0)

    def num_frames_required(self) -> int:
        return 512 if self.sample_rate == 16000 else int(self.sample_rate * 0.032)

    def voice_confidence(self, buffer: bytes) -> float:
        n = len(buffer) // 2
        if n == 0:
            return 0.0
        samples = struct.unpack(f"<{n}h", buffer[: n * 2])
        rms = math.sqrt(sum(s * s for s in samples) / n)
        return 1.0 if rms >= self._threshold else 0.0


class FixedCompleteTurnAnalyzer(BaseTurnAnalyzer):
    """--no-models: every analysis answers COMPLETE at once (no model runs)."""

    def __init__(self):
        super().__init__()
        self._speech = False

    @property
    def speech_triggered(self) -> bool:
        return self._speech

    @property
    def params(self) -> BaseTurnParams:
        return BaseTurnParams()

    def append_audio(self, buffer: bytes, is_speech: bool) -> EndOfTurnState:
        self._speech = self._speech or is_speech
        return EndOfTurnState.INCOMPLETE

    async def analyze_end_of_turn(self):
        self._speech = False
        return EndOfTurnState.COMPLETE, None

    def clear(self):
        self._speech = False


class MockSTT(STTService):
    """A finalized transcript a fixed delay after each VAD stop (brisvox's mock
    STT: final 150 ms after the finalize its VAD stop sends)."""

    def __init__(self, *, final_ms: float, **kwargs):
        super().__init__(
            ttfs_p99_latency=final_ms / 1000.0, settings=settings_without_values(STTSettings), **kwargs
        )
        self._final_s = final_ms / 1000.0
        self._pending = None

    async def run_stt(self, audio: bytes):
        # Transcripts come from the VAD stop, not from the audio.
        return
        yield  # noqa: unreachable (makes this an async generator)

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            self._pending = self.create_task(self._final_later(), "mock_stt_final")
        elif isinstance(frame, VADUserStartedSpeakingFrame) and self._pending:
            await self.cancel_task(self._pending)
            self._pending = None

    async def _final_later(self):
        await asyncio.sleep(self._final_s)
        self._pending = None
        await self.push_frame(
            TranscriptionFrame(text="hello there", user_id="caller", timestamp=time_now_iso8601(), finalized=True)
        )


class MockLLM(LLMService):
    """First token a fixed delay after the request, then one word per token at a
    fixed interval (brisvox's MockLlmConfig::default)."""

    def __init__(self, *, first_token_ms: float, token_interval_ms: float, answer: str, stats: dict, **kwargs):
        settings = settings_without_values(LLMSettings, filter_incomplete_user_turns=False)
        super().__init__(settings=settings, **kwargs)
        self._first_s = first_token_ms / 1000.0
        self._gap_s = token_interval_ms / 1000.0
        words = answer.split(" ")
        self._tokens = [w + " " for w in words[:-1]] + [words[-1]]
        self._stats = stats

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if not isinstance(frame, LLMContextFrame):
            await self.push_frame(frame, direction)
            return
        self._stats["llm_requests"] += 1
        first = True
        try:
            await self.push_frame(LLMFullResponseStartFrame())
            await asyncio.sleep(self._first_s)
            for tok in self._tokens:
                if not first:
                    await asyncio.sleep(self._gap_s)
                first = False
                await self.push_frame(LLMTextFrame(tok))
            await self.push_frame(LLMFullResponseEndFrame())
        except asyncio.CancelledError:
            self._stats["llm_cancelled" if not first else "llm_cancelled_before_first_token"] += 1
            raise


class MockTTS(TTSService):
    """A 220 Hz tone (peak 6000) whose length follows the text: first audio a
    fixed delay after the text, then fixed-size chunks at a fixed interval
    (brisvox's MockTtsConfig::default: 150 ms, 40 ms chunks every 20 ms, 60 ms per
    character)."""

    def __init__(self, *, first_ms, chunk_ms, interval_ms, ms_per_char, rate, **kwargs):
        super().__init__(
            push_start_frame=True, push_stop_frames=True, sample_rate=rate,
            settings=settings_without_values(TTSSettings), **kwargs,
        )
        self._first_s = first_ms / 1000.0
        self._chunk_samples = int(rate * chunk_ms / 1000.0)
        self._gap_s = interval_ms / 1000.0
        self._ms_per_char = ms_per_char
        self._rate = rate

    def can_generate_metrics(self) -> bool:
        return True

    async def run_tts(self, text: str, context_id: str):
        total = int(len(text) * self._ms_per_char * self._rate / 1000.0)
        await asyncio.sleep(self._first_s)
        await self.stop_ttfb_metrics()
        pos = 0
        while pos < total:
            n = min(self._chunk_samples, total - pos)
            w = 2.0 * math.pi * 220.0 / self._rate
            pcm = struct.pack(f"<{n}h", *(int(6000 * math.sin(w * (pos + i))) for i in range(n)))
            pos += n
            yield TTSAudioRawFrame(audio=pcm, sample_rate=self._rate, num_channels=1, context_id=context_id)
            if pos < total:
                await asyncio.sleep(self._gap_s)


def build_turn_parts(cfg):
    params = VADParams(
        confidence=cfg.vad_confidence, start_secs=cfg.vad_start_ms / 1000.0, stop_secs=cfg.vad_stop_ms / 1000.0
    )
    if cfg.no_models:
        vad = EnergyVADAnalyzer(threshold_dbfs=cfg.energy_threshold_dbfs, params=params)
        turn = FixedCompleteTurnAnalyzer()
    else:
        from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
        from pipecat.audio.vad.silero import SileroVADAnalyzer

        vad = SileroVADAnalyzer(params=params)
        turn = LocalSmartTurnAnalyzerV3()
    return vad, turn


def count_work(serializer, vad, turn, stt, tts):
    """BRISVOX_PEER_COUNT=1 (audit of issue #7): wraps, on this call's instances only,
    the methods where the work happens and returns a dict that fills up during the
    call. Each wrapper calls the original with the same arguments and returns its
    result, so the pipeline does the same work; only counters and clocks are added.
    time.thread_time() is the CPU time of the calling thread: the VAD and Smart Turn
    run on their own executor threads, so their CPU is measured where it is spent."""
    c = {
        "frames_in": 0, "bytes_in": 0, "bad_frame_bytes": 0,
        "vad_calls": 0, "vad_bytes": 0,
        "vad_windows": 0, "vad_window_bytes_other": 0, "vad_cpu_s": 0.0,
        "vad_rate": 0, "vad_stop_windows": 0, "vad_start_windows": 0,
        "vad_starts": 0, "vad_stops": 0,
        "turn_append_bytes": 0, "turn_analyses": 0, "turn_analysis_wall_ms": [],
        "smart_turn_runs": 0, "smart_turn_audio_s": [], "smart_turn_prob": [], "smart_turn_cpu_s": 0.0,
        "tts_requests": 0, "tts_chars": 0, "audio_out_bytes": 0,
    }
    # Input frames by the id of their audio bytes (kept alive here, so ids stay
    # unique), to name the frames that never reached the VAD.
    pending = {}

    deserialize = serializer.deserialize

    async def deserialize_counted(data):
        frame = await deserialize(data)
        if isinstance(frame, InputAudioRawFrame):
            c["frames_in"] += 1
            c["bytes_in"] += len(frame.audio)
            c["bad_frame_bytes"] += len(frame.audio) % 2
            pending[id(frame.audio)] = (c["frames_in"], frame.audio)
        return frame

    serializer.deserialize = deserialize_counted

    serialize = serializer.serialize

    async def serialize_counted(frame):
        out = await serialize(frame)
        if isinstance(frame, OutputAudioRawFrame) and out is not None:
            c["audio_out_bytes"] += len(out)
        return out

    serializer.serialize = serialize_counted

    analyze_audio = vad.analyze_audio

    async def analyze_audio_counted(buffer):
        c["vad_calls"] += 1
        c["vad_bytes"] += len(buffer)
        pending.pop(id(buffer), None)
        c["vad_rate"] = vad.sample_rate
        c["vad_stop_windows"] = vad._vad_stop_frames
        c["vad_start_windows"] = vad._vad_start_frames
        return await analyze_audio(buffer)

    vad.analyze_audio = analyze_audio_counted

    voice_confidence = vad.voice_confidence

    def voice_confidence_counted(buffer):
        t0 = time.thread_time()
        out = voice_confidence(buffer)
        c["vad_cpu_s"] += time.thread_time() - t0
        c["vad_windows"] += 1
        if len(buffer) != 2 * vad.num_frames_required():
            c["vad_window_bytes_other"] += 1
        return out

    vad.voice_confidence = voice_confidence_counted

    append_audio = turn.append_audio

    def append_audio_counted(buffer, is_speech):
        c["turn_append_bytes"] += len(buffer)
        return append_audio(buffer, is_speech)

    turn.append_audio = append_audio_counted

    analyze_end_of_turn = turn.analyze_end_of_turn

    async def analyze_end_of_turn_counted():
        c["turn_analyses"] += 1
        t0 = time.monotonic()
        out = await analyze_end_of_turn()
        c["turn_analysis_wall_ms"].append(round(1000 * (time.monotonic() - t0), 1))
        return out

    turn.analyze_end_of_turn = analyze_end_of_turn_counted

    if hasattr(turn, "_predict_endpoint"):
        predict = turn._predict_endpoint

        def predict_counted(audio_array):
            t0 = time.thread_time()
            out = predict(audio_array)
            c["smart_turn_cpu_s"] += time.thread_time() - t0
            c["smart_turn_runs"] += 1
            c["smart_turn_audio_s"].append(round(len(audio_array) / turn.sample_rate, 3))
            c["smart_turn_prob"].append(round(out["probability"], 3))
            return out

        turn._predict_endpoint = predict_counted

    stt_process = stt.process_frame

    async def stt_process_counted(frame, direction):
        if isinstance(frame, VADUserStartedSpeakingFrame):
            c["vad_starts"] += 1
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            c["vad_stops"] += 1
        return await stt_process(frame, direction)

    stt.process_frame = stt_process_counted

    run_tts = tts.run_tts

    def run_tts_counted(text, context_id):
        c["tts_requests"] += 1
        c["tts_chars"] += len(text)
        return run_tts(text, context_id)

    tts.run_tts = run_tts_counted
    # Filled in at the end of the call: 1-based numbers of the input frames the VAD
    # never saw (the last frame is the client's final 20 ms of silence before `end`).
    c["frames_not_at_vad"] = lambda: sorted(n for n, _ in pending.values())
    return c


app = FastAPI()
STATS = {"calls": 0, "llm_requests": 0, "llm_cancelled": 0, "llm_cancelled_before_first_token": 0}


async def handshake(ws: WebSocket):
    """Reads `start`, answers `started`; returns (sample rate, frame ms) or None.

    `frame_ms` (10, 20 or 40; 20 when absent, as in the brisvox protocol) sets the
    duration of the audio messages sent back: Pipecat's `audio_out_10ms_chunks`.
    """
    try:
        msg = json.loads(await asyncio.wait_for(ws.receive_text(), timeout=10))
    except Exception:
        await ws.close(code=1002)
        return None
    rate = msg.get("sample_rate")
    if msg.get("type") != "start" or msg.get("codec") != "pcm16" or rate not in SUPPORTED_RATES:
        await ws.send_text(json.dumps({"type": "error", "code": "unsupported", "message": "pcm16 start only"}))
        await ws.send_text('{"type":"end","reason":"protocol_error"}')
        await ws.close(code=1003)
        return None
    frame_ms = 20 if msg.get("frame_ms") is None else msg["frame_ms"]
    if frame_ms not in (10, 20, 40):
        await ws.send_text(json.dumps({"type": "error", "code": "invalid_field", "message": "start.frame_ms must be 10, 20 or 40"}))
        await ws.send_text('{"type":"end","reason":"protocol_error"}')
        await ws.close(code=1002)
        return None
    started = {
        "type": "started", "protocol_version": 1, "call_id": msg.get("call_id", ""), "codec": "pcm16",
        "sample_rate": rate, "frame_ms": frame_ms, "providers": {"stt": "mock", "llm": "mock", "tts": "mock"},
        "mock": True,
    }
    await ws.send_text(json.dumps(started))
    return rate, frame_ms


async def run_call(ws: WebSocket):
    await ws.accept()
    opened = await handshake(ws)
    if opened is None:
        return
    rate, frame_ms = opened
    STATS["calls"] += 1
    serializer = BrisvoxProtocolSerializer(rate)
    transport = FastAPIWebsocketTransport(
        websocket=ws,
        params=FastAPIWebsocketParams(
            audio_in_enabled=True, audio_out_enabled=True, audio_in_sample_rate=rate, audio_out_sample_rate=rate,
            add_wav_header=False, serializer=serializer, audio_out_end_silence_secs=0,
            audio_out_10ms_chunks=frame_ms // 10,
        ),
    )
    counting = os.environ.get(COUNT_ENV) == "1"
    build_cpu0, build_t0 = time.thread_time(), time.monotonic()
    vad, turn = build_turn_parts(CFG)
    build_cpu_s, build_wall_s = time.thread_time() - build_cpu0, time.monotonic() - build_t0
    context = LLMContext()
    aggregators = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=vad,
            user_turn_strategies=UserTurnStrategies(stop=[TurnAnalyzerUserTurnStopStrategy(turn_analyzer=turn)]),
        ),
    )
    stt = MockSTT(final_ms=CFG.stt_final_ms)
    llm = MockLLM(first_token_ms=CFG.llm_first_token_ms, token_interval_ms=CFG.llm_token_interval_ms,
                  answer=CFG.answer, stats=STATS)
    tts = MockTTS(first_ms=CFG.tts_first_audio_ms, chunk_ms=CFG.tts_chunk_ms,
                  interval_ms=CFG.tts_chunk_interval_ms, ms_per_char=CFG.tts_ms_per_char, rate=CFG.tts_rate)
    pipeline = Pipeline([transport.input(), stt, aggregators.user(), llm, tts, transport.output(),
                         aggregators.assistant()])
    # RTVI is Pipecat's own client protocol; this peer speaks the brisvox protocol instead.
    worker = PipelineWorker(
        pipeline, params=PipelineParams(audio_in_sample_rate=rate, audio_out_sample_rate=rate), enable_rtvi=False
    )

    async def on_end():
        await worker.queue_frames([OutputTransportMessageUrgentFrame(message={"type": "end", "reason": "client_end"}),
                                   EndFrame()])

    serializer.on_end = on_end
    counts = count_work(serializer, vad, turn, stt, tts) if counting else None

    @transport.event_handler("on_client_disconnected")
    async def on_disconnected(_transport, _ws):
        await worker.cancel()

    runner = WorkerRunner(handle_sigint=False)
    t0 = time.monotonic()
    await runner.add_workers(worker)
    await runner.run()
    logger.info(f"call done in {time.monotonic() - t0:.1f} s; totals {STATS}")
    print(f"pipecat-peer: call done; totals {json.dumps(STATS)}", file=sys.stderr, flush=True)
    if counts is not None:
        counts["model_build_cpu_s"] = round(build_cpu_s, 4)
        counts["model_build_wall_s"] = round(build_wall_s, 4)
        counts["vad_cpu_s"] = round(counts["vad_cpu_s"], 4)
        counts["smart_turn_cpu_s"] = round(counts["smart_turn_cpu_s"], 4)
        counts["call_wall_s"] = round(time.monotonic() - t0, 3)
        counts["frames_not_at_vad"] = counts["frames_not_at_vad"]()
        print(f"pipecat-peer: counts {json.dumps(counts)}", file=sys.stderr, flush=True)


@app.websocket("/call")
async def call_route(ws: WebSocket):
    await run_call(ws)


@app.websocket("/")
async def root_route(ws: WebSocket):
    await run_call(ws)


def main():
    args = parse_args()
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print("bot.py: benchmark peer binds to loopback only", file=sys.stderr)
        sys.exit(2)
    os.environ[CONFIG_ENV] = json.dumps(vars(args))
    import uvicorn

    here = os.path.dirname(os.path.abspath(__file__))
    uvicorn.run("bot:app", host=args.host, port=args.port, workers=args.workers, app_dir=here,
                log_level=args.log_level.lower())


if __name__ == "__main__":
    main()
