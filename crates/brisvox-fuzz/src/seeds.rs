//! The seed corpus: for each target, a few valid inputs taken from the
//! protocols' documented examples (the carriers' messages as
//! [`CarrierEmulator`] writes them, the websocket protocol's doc, the
//! vendors' documented messages, the repository's agent files), so that the
//! fuzzer starts from deep inside each parser rather than from its first
//! `if`.

use brisvox_audio::wav::{WavSpec, write_wav};
use brisvox_transport::AudioCodec;
use brisvox_transport::carrier::emulator::CarrierEmulator;
use brisvox_transport::carrier::{Carrier, Outbound, WireFormat};
use serde_json::{Map, Value, json};

use crate::messages::{Message, encode, text};
use crate::targets::link::Op;

/// The seeds of the target named `name` (empty for an unknown name).
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    match name {
        "call_ws" => call_ws(),
        "twilio" => carrier(Carrier::Twilio, &[WireFormat::MULAW_8K]),
        "telnyx" => carrier(
            Carrier::Telnyx,
            &[WireFormat::MULAW_8K, format(AudioCodec::Alaw, 8000)],
        ),
        "plivo" => carrier(
            Carrier::Plivo,
            &[
                WireFormat::MULAW_8K,
                format(AudioCodec::Pcm16, 8000),
                format(AudioCodec::Pcm16, 16000),
            ],
        ),
        "vonage" => carrier(
            Carrier::Vonage,
            &[
                format(AudioCodec::Pcm16, 8000),
                format(AudioCodec::Pcm16, 16000),
            ],
        ),
        "exotel" => carrier(
            Carrier::Exotel,
            &[
                format(AudioCodec::Pcm16, 8000),
                format(AudioCodec::Pcm16, 24000),
            ],
        ),
        "agent_link" => agent_link(),
        "sse" => sse(),
        "deepgram" => deepgram(),
        "cartesia" => texts(&CARTESIA),
        "elevenlabs" => texts(&ELEVENLABS),
        "agent_file" => AGENT_FILES.iter().map(|f| f.as_bytes().to_vec()).collect(),
        "wav" => wav(),
        _ => Vec::new(),
    }
}

fn format(codec: AudioCodec, sample_rate_hz: u32) -> WireFormat {
    WireFormat {
        codec,
        sample_rate_hz,
    }
}

fn call_ws() -> Vec<Vec<u8>> {
    let start16 = r#"{"type":"start","protocol_version":1,"codec":"pcm16","sample_rate":16000,"call_id":"demo-42","metadata":{"caller":"+15550100"}}"#;
    let start8 = r#"{"type":"start","protocol_version":1,"codec":"mulaw","sample_rate":8000,"call_id":"c-7"}"#;
    let alaw =
        r#"{"type":"start","protocol_version":1,"codec":"alaw","sample_rate":8000,"call_id":"a"}"#;
    let pcm = [0u8; 640];
    let mulaw = [0xffu8; 250];
    vec![
        encode([
            text(start16),
            Message::Binary(&pcm),
            text(r#"{"type":"say","text":"Please hold while I check that."}"#),
            Message::Binary(&pcm[..100]),
            text(r#"{"type":"end","reason":"user hung up"}"#),
        ]),
        encode([
            text(start8),
            Message::Binary(&mulaw),
            text(r#"{"type":"end"}"#),
        ]),
        encode([
            text(alaw),
            Message::Binary(&mulaw[..160]),
            text(r#"{"type":"dtmf","digit":"5"}"#),
        ]),
        encode([text(r#"{"type":"say","text":"before start"}"#)]),
    ]
}

/// A whole stream as the carrier sends it: opening, media, a key, a mark's
/// echo, the stop.
fn carrier(carrier: Carrier, formats: &[WireFormat]) -> Vec<Vec<u8>> {
    let mut params = Map::new();
    params.insert("tenant".into(), Value::String("acme".into()));
    formats
        .iter()
        .map(|&format| {
            let mut emu = CarrierEmulator::new(carrier, format, "MZ0123", "CA4567");
            let mut out = emu.opening(&params, "+15550100", "+15550199");
            let audio = vec![0x55u8; format.frame_bytes() * 2 + 7];
            out.push(emu.media(&audio));
            out.push(emu.dtmf('7'));
            out.push(emu.mark_echo("brisvox-mark-1"));
            out.extend(emu.cleared());
            out.extend(emu.stop());
            encode(out.iter().map(|o| match o {
                Outbound::Text(t) => text(t.as_str()),
                Outbound::Binary(b) => Message::Binary(b.as_slice()),
            }))
        })
        .collect()
}

/// The commands of docs/AGENT_PROTOCOL.md, one seed each, and three calls:
/// every command in answer to its event (the first tool call is event 2), a
/// link that drops with a tool call waiting and resumes, a link never opened.
fn agent_link() -> Vec<Vec<u8>> {
    let ops = |ops: &[Op]| ops.iter().map(|&op| op as u8).collect::<Vec<u8>>();
    let open = ops(&[Op::Connected, Op::ToolCall]);
    let event = ops(&[Op::Event]);
    let end = ops(&[Op::Tick, Op::CallEnded]);
    let resume = ops(&[Op::Disconnected, Op::Timeout, Op::Connected, Op::Event]);
    let never = ops(&[
        Op::ConnectFailed,
        Op::Timeout,
        Op::ConnectFailed,
        Op::Timeout,
    ]);
    let given_up = ops(&[
        Op::ConnectFailed,
        Op::Timeout,
        Op::ConnectFailed,
        Op::ToolCall,
    ]);
    let mut seeds = texts(&AGENT_COMMANDS);
    let mut answered = vec![Message::Binary(&open)];
    answered.extend(AGENT_COMMANDS.iter().map(|c| text(c)));
    answered.extend([Message::Binary(&event), Message::Binary(&end)]);
    seeds.push(encode(answered));
    seeds.push(encode([
        Message::Binary(&open),
        Message::Binary(&resume),
        text(r#"{"type":"shout","re":2}"#),
        text(r#"{"type":"tool.result","re":99,"result":null}"#),
        Message::Binary(&end),
    ]));
    seeds.push(encode([
        Message::Binary(&never),
        Message::Binary(&given_up),
        text(AGENT_COMMANDS[0]),
    ]));
    seeds
}

/// docs/AGENT_PROTOCOL.md's command examples, the tool results naming event
/// 2 (the seeds' first tool call).
const AGENT_COMMANDS: [&str; 8] = [
    r#"{"type": "tool.result", "re": 2, "result": {"status": "shipped", "carrier": "UPS"}}"#,
    r#"{"type": "tool.result", "re": 2, "error": "no order with id 42"}"#,
    r#"{"type": "say", "re": 4, "text": "One moment, I am looking that up.", "interrupt": false}"#,
    r#"{"type": "context.update", "re": 1, "system_prompt": "You are the front desk of a small hotel.", "messages": {"mode": "append", "items": [{"role": "system", "content": "The caller is a returning guest."}]}}"#,
    r#"{"type": "tools.set", "tools": [{"name": "order_status", "description": "Status of an order by id.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}]}"#,
    r#"{"type": "respond", "re": 4}"#,
    r#"{"type": "call.transfer", "re": 4, "to": "sales", "say": "Let me put you through to sales."}"#,
    r#"{"type": "call.end", "re": 4, "say": "Thank you for calling. Goodbye!", "reason": "done"}"#,
];

fn sse() -> Vec<Vec<u8>> {
    let delta = |d: Value| {
        format!(
            "data: {}\n\n",
            json!({"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":d,"finish_reason":null}]})
        )
    };
    let stream = [
        ": OPENROUTER PROCESSING\n\n".to_owned(),
        delta(json!({"role":"assistant","content":""})),
        delta(json!({"content":"Hello"})),
        delta(json!({"reasoning":"thinking"})),
        delta(json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_time","arguments":"{\"tz\""}}]})),
        delta(json!({"tool_calls":[{"index":0,"function":{"arguments":":\"UTC\"}"}}]})),
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\r\n\r\n".to_owned(),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    // The same stream cut into network chunks at awkward places.
    let bytes = stream.as_bytes();
    let cut = |at: &[usize]| {
        let mut parts = Vec::new();
        let mut from = 0;
        for &to in at.iter().chain([&bytes.len()]) {
            parts.push(Message::Binary(&bytes[from..to]));
            from = to;
        }
        encode(parts)
    };
    let error = "data: {\"error\":{\"message\":\"overloaded\",\"code\":529}}\n\n";
    vec![
        cut(&[]),
        cut(&[3, 40, 41, 200]),
        encode([Message::Binary(error.as_bytes())]),
    ]
}

fn deepgram() -> Vec<Vec<u8>> {
    let speak = [
        r#"{"type":"Metadata","request_id":"r1","model_name":"aura-2-thalia-en","model_version":"1","model_uuid":"u"}"#,
        r#"{"type":"Flushed","sequence_id":0}"#,
        r#"{"type":"Cleared","sequence_id":1}"#,
        r#"{"type":"Warning","description":"text too long","code":"W1"}"#,
    ];
    let pcm = [1u8, 0, 2, 0, 3];
    let mut seeds = texts(&DEEPGRAM_LISTEN);
    seeds.push(encode(
        speak.iter().map(|s| text(s)).chain([Message::Binary(&pcm)]),
    ));
    seeds
}

fn texts(messages: &[&str]) -> Vec<Vec<u8>> {
    messages.iter().map(|m| encode([text(m)])).collect()
}

const DEEPGRAM_LISTEN: [&str; 5] = [
    include_str!(
        "../../brisvox-providers/tests/fixtures/vendors/deepgram/endpointing_results_response.json"
    ),
    include_str!(
        "../../brisvox-providers/tests/fixtures/vendors/deepgram/speech_started_response.json"
    ),
    include_str!(
        "../../brisvox-providers/tests/fixtures/vendors/deepgram/utterance_end_response.json"
    ),
    include_str!(
        "../../brisvox-providers/tests/fixtures/vendors/deepgram/close_stream_metadata_response.json"
    ),
    r#"{"type":"Error","description":"bad audio","message":"x","variant":"y"}"#,
];

const CARTESIA: [&str; 5] = [
    r#"{"type":"chunk","data":"AQACAA==","done":false,"status_code":206,"context_id":"c1"}"#,
    r#"{"type":"done","done":true,"context_id":"c1"}"#,
    r#"{"type":"timestamps","context_id":"c1","word_timestamps":{"words":["Hello","there"],"start":[0.0,0.4],"end":[0.3,0.8]}}"#,
    r#"{"type":"error","context_id":"c1","status_code":429,"error":"You have reached your concurrency limit of 2"}"#,
    r#"{"type":"error","context_id":"c1","status_code":400,"error_code":"model_not_found","error":"Invalid model"}"#,
];

const ELEVENLABS: [&str; 4] = [
    r#"{"audio":"AQA=","isFinal":false,"contextId":"c1","normalizedAlignment":null}"#,
    r#"{"audio":"AQA=","isFinal":true,"contextId":"c1","alignment":{"chars":["H","i"," "],"charStartTimesMs":[0,50,90],"charsDurationsMs":[50,40,30]}}"#,
    r#"{"isFinal":true,"contextId":"c1"}"#,
    r#"{"message":"Maximum simultaneous contexts","error":"max_active_conversations","code":1008}"#,
];

const AGENT_FILES: [&str; 6] = [
    include_str!("../../../examples/agent.toml"),
    include_str!("../../../examples/agent-mock.toml"),
    include_str!("../../../deploy/kubernetes/agent.toml"),
    include_str!("../../../bench/agents/local-demo.toml"),
    include_str!("../../../bench/agents/mock-no-models.toml"),
    "[server]\nbind = \"127.0.0.1:9\"\nallow_unauthenticated_calls = true\n[server.auth.metrics]\ntoken = \"${T}\"\naccept = \"query\"\n",
];

fn wav() -> Vec<Vec<u8>> {
    let mono = WavSpec {
        channels: 1,
        sample_rate_hz: 8000,
    };
    let stereo = WavSpec {
        channels: 2,
        sample_rate_hz: 16000,
    };
    let samples: Vec<i16> = (0..16).map(|i| i * 1000 - 8000).collect();
    // Written by ourselves: cannot fail for these specs and even lengths.
    let plain = write_wav(mono, &samples).expect("a valid spec");
    let mut listed = write_wav(stereo, &samples).expect("a valid spec");
    // A LIST chunk between `fmt ` and `data`, as many editors write.
    let data_at = listed.len() - samples.len() * 2 - 8;
    let list = b"LIST\x0a\x00\x00\x00INFOISFT\x00\x00";
    listed.splice(data_at..data_at, list.iter().copied());
    vec![plain, listed]
}
