//! Answers as each engine writes them, usage and all, written from the
//! engines' public API references: the tour's usage rows send them, and
//! the crate's tests (`tests/it/what_the_engine_billed.rs`) read every one
//! through the wire.

/// What an answer's usage reads as: `(input, output, cached, reasoning)`.
pub type Counts = (Option<u64>, Option<u64>, Option<u64>, Option<u64>);

/// A whole answer of each shape: the tour's row, what its wire column
/// says, the body, and what it billed.
pub const WHOLE: [(&str, &str, &str, Counts); 5] = [
    (
        "usage, OpenAI chat",
        "HTTP 200, usage as OpenAI chat writes it",
        OPENAI_CHAT,
        (Some(1117), Some(46), Some(1024), Some(0)),
    ),
    (
        "usage, OpenAI Responses",
        "HTTP 200, usage as Responses writes it",
        OPENAI_RESPONSES,
        (Some(36), Some(87), Some(0), Some(64)),
    ),
    // Input is the uncached input with the cache's reads and writes.
    (
        "usage, Anthropic",
        "HTTP 200, usage as Anthropic writes it",
        ANTHROPIC,
        (Some(3895), Some(503), Some(1800), None),
    ),
    // Output is the candidates with the thoughts.
    (
        "usage, Gemini",
        "HTTP 200, usageMetadata, thoughts",
        GEMINI,
        (Some(8), Some(1047), None, Some(1040)),
    ),
    (
        "usage, Ollama",
        "HTTP 200, Ollama's eval counts",
        OLLAMA,
        (Some(26), Some(298), None, None),
    ),
];

/// `POST /v1/chat/completions`.
pub const OPENAI_CHAT: &str = r#"{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "The image shows a wooden boardwalk path running through a lush green field.",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
    "completion_tokens_details": {
      "reasoning_tokens": 0,
      "audio_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }
  },
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
}"#;

/// `POST /v1/responses`.
pub const OPENAI_RESPONSES: &str = r#"{
  "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
  "object": "response",
  "created_at": 1741476542,
  "status": "completed",
  "error": null,
  "incomplete_details": null,
  "instructions": null,
  "max_output_tokens": null,
  "model": "o4-mini-2025-04-16",
  "output": [
    {"id": "rs_67ccd2bf", "type": "reasoning", "summary": []},
    {
      "type": "message",
      "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e6",
      "status": "completed",
      "role": "assistant",
      "content": [
        {"type": "output_text", "text": "In a peaceful grove beneath a silver moon, a unicorn named Lumina discovered a hidden pool.", "annotations": []}
      ]
    }
  ],
  "parallel_tool_calls": true,
  "previous_response_id": null,
  "reasoning": {"effort": "medium", "summary": null},
  "store": true,
  "temperature": 1.0,
  "text": {"format": {"type": "text"}},
  "tool_choice": "auto",
  "tools": [],
  "top_p": 1.0,
  "truncation": "disabled",
  "usage": {
    "input_tokens": 36,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 87,
    "output_tokens_details": {"reasoning_tokens": 64},
    "total_tokens": 123
  },
  "user": null,
  "metadata": {}
}"#;

/// `POST /v1/messages`.
pub const ANTHROPIC: &str = r#"{
  "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-20250514",
  "content": [{"type": "text", "text": "Hi! My name is Claude."}],
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {
    "input_tokens": 2095,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 1800,
    "output_tokens": 503
  }
}"#;

/// `POST /v1beta/models/gemini-2.5-flash:generateContent`.
pub const GEMINI: &str = r#"{
  "candidates": [
    {
      "content": {"parts": [{"text": "AI learns patterns from data to make predictions."}], "role": "model"},
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 8,
    "candidatesTokenCount": 7,
    "totalTokenCount": 1055,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}],
    "thoughtsTokenCount": 1040
  },
  "modelVersion": "gemini-2.5-flash",
  "responseId": "mJ8FaLjGMayE7dcP4Ma1wAs"
}"#;

/// `POST /api/chat` with `"stream": false`.
pub const OLLAMA: &str = r#"{"model":"llama3.2","created_at":"2023-12-12T14:13:43.416799Z","message":{"role":"assistant","content":"Hello! How are you today?"},"done_reason":"stop","done":true,"total_duration":5191566416,"load_duration":2154458,"prompt_eval_count":26,"prompt_eval_duration":383809000,"eval_count":298,"eval_duration":4799921000}"#;

/// A stream of each shape: the tour's row, what its wire column says, its
/// content type, its body, and what it billed (none for the streams that
/// leave usage out).
pub const STREAMS: [(&str, &str, &str, &str, Option<Counts>); 8] = [
    (
        "usage stream, OpenAI chat",
        "SSE, include_usage's last chunk",
        SSE,
        OPENAI_CHAT_STREAM,
        Some((Some(9), Some(12), Some(0), Some(0))),
    ),
    (
        "usage stream, no chunk",
        "SSE, OpenAI chat without include_usage",
        SSE,
        OPENAI_CHAT_STREAM_BARE,
        None,
    ),
    (
        "usage stream, Responses",
        "SSE, response.completed's usage",
        SSE,
        OPENAI_RESPONSES_STREAM,
        Some((Some(37), Some(11), Some(0), Some(0))),
    ),
    (
        "usage stream, Anthropic",
        "SSE, message_start then message_delta",
        SSE,
        ANTHROPIC_STREAM,
        Some((Some(25), Some(15), Some(0), None)),
    ),
    (
        "usage stream, cumulative",
        "SSE, message_delta repeating every count",
        SSE,
        ANTHROPIC_STREAM_CUMULATIVE,
        Some((Some(472), Some(89), Some(400), None)),
    ),
    (
        "usage stream, Gemini",
        "SSE, usageMetadata in every chunk",
        SSE,
        GEMINI_STREAM,
        Some((Some(8), Some(12), None, None)),
    ),
    (
        "usage stream, Ollama",
        "NDJSON, counts on the done line",
        NDJSON,
        OLLAMA_STREAM,
        Some((Some(26), Some(290), None, None)),
    ),
    (
        "usage stream, no counts",
        "NDJSON, a done line without counts",
        NDJSON,
        OLLAMA_STREAM_BARE,
        None,
    ),
];

pub const SSE: &str = "text/event-stream";
pub const NDJSON: &str = "application/x-ndjson";

/// `stream: true, stream_options: {include_usage: true}`: every chunk has
/// `"usage": null` but the last, whose `choices` is empty.
pub const OPENAI_CHAT_STREAM: &str = concat!(
    r#"data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

/// `stream: true` alone: no chunk says what was billed.
pub const OPENAI_CHAT_STREAM_BARE: &str = concat!(
    r#"data: {"id":"chatcmpl-124","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"logprobs":null,"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-124","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

/// `POST /v1/responses` with `stream: true`: usage in `response.completed`.
pub const OPENAI_RESPONSES_STREAM: &str = concat!(
    "event: response.created\n",
    r#"data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"in_progress","error":null,"model":"gpt-4.1-2025-04-14","output":[],"usage":null,"user":null,"metadata":{}}}"#,
    "\n\n",
    "event: response.output_text.delta\n",
    r#"data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":"Hi there!"}"#,
    "\n\n",
    "event: response.completed\n",
    r#"data: {"type":"response.completed","sequence_number":8,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"completed","error":null,"model":"gpt-4.1-2025-04-14","output":[{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there!","annotations":[]}]}],"usage":{"input_tokens":37,"input_tokens_details":{"cached_tokens":0},"output_tokens":11,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":48},"user":null,"metadata":{}}}"#,
    "\n\n",
);

/// `POST /v1/messages` with `stream: true`: the input in `message_start`,
/// the output's running count in `message_delta`.
pub const ANTHROPIC_STREAM: &str = concat!(
    "event: message_start\n",
    r#"data: {"type": "message_start", "message": {"id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant", "content": [], "model": "claude-opus-4-1-20250805", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}}"#,
    "\n\n",
    "event: content_block_start\n",
    r#"data: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}"#,
    "\n\n",
    "event: ping\n",
    r#"data: {"type": "ping"}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}"#,
    "\n\n",
    "event: content_block_stop\n",
    r#"data: {"type": "content_block_stop", "index": 0}"#,
    "\n\n",
    "event: message_delta\n",
    r#"data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 15}}"#,
    "\n\n",
    "event: message_stop\n",
    r#"data: {"type": "message_stop"}"#,
    "\n\n",
);

/// The same, as a newer API writes `message_delta`: every count again,
/// cumulative, the ones it does not know `null`.
pub const ANTHROPIC_STREAM_CUMULATIVE: &str = concat!(
    "event: message_start\n",
    r#"data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":12,"cache_creation_input_tokens":60,"cache_read_input_tokens":400,"output_tokens":1}}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
    "\n\n",
    "event: message_delta\n",
    r#"data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":null,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":40}}"#,
    "\n\n",
    "event: message_delta\n",
    r#"data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":12,"cache_creation_input_tokens":60,"cache_read_input_tokens":400,"output_tokens":89}}"#,
    "\n\n",
    "event: message_stop\n",
    r#"data: {"type":"message_stop"}"#,
    "\n\n",
);

/// `:streamGenerateContent?alt=sse`: every chunk has `usageMetadata`, the
/// last one the final counts.
pub const GEMINI_STREAM: &str = concat!(
    r#"data: {"candidates": [{"content": {"parts": [{"text": "The"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 8,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 8}]},"modelVersion": "gemini-2.0-flash"}"#,
    "\r\n\r\n",
    r#"data: {"candidates": [{"content": {"parts": [{"text": " sky is blue because of Rayleigh scattering."}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 12,"totalTokenCount": 20,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 8}],"candidatesTokensDetails": [{"modality": "TEXT","tokenCount": 12}]},"modelVersion": "gemini-2.0-flash"}"#,
    "\r\n\r\n",
);

/// `POST /api/chat`, streamed: the counts on the `done: true` line.
pub const OLLAMA_STREAM: &str = concat!(
    r#"{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":"The"},"done":false}"#,
    "\n",
    r#"{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":" sky"},"done":false}"#,
    "\n",
    r#"{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":290,"eval_duration":4535599000}"#,
    "\n",
);

/// An Ollama-like engine whose last line says nothing of counts.
pub const OLLAMA_STREAM_BARE: &str = concat!(
    r#"{"model":"llama3.2","message":{"role":"assistant","content":"The sky"},"done":false}"#,
    "\n",
    r#"{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true}"#,
    "\n",
);
