//! Integration tests of the controller crate: the API's description, GPU requests, fail-stop, the
//! state machine's replay, and state directories written by earlier builds.

mod bom;
mod failstop;
mod gpus;
mod openapi;
mod parm;
mod replay;
mod state_env;
mod state_format;

use tessera_proto::api::{OptionArg, SubmitRequest};

/// A one-line script submitted with `opts` (option, value).
pub fn request(opts: &[(&str, &str)]) -> SubmitRequest {
    SubmitRequest {
        script: "#!/bin/sh\ntrue\n".into(),
        options: opts.iter().map(|(o, v)| OptionArg { option: o.to_string(), value: v.to_string() }).collect(),
        workdir: "/tmp".into(),
        ..Default::default()
    }
}
