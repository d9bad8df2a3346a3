//! brisvox-transport: wire protocols (the brisvox websocket protocol, Twilio Media Streams).
