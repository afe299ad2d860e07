//! Integration tests of the controller crate: the API's description, GPU requests, and the
//! state machine's replay.

mod gpus;
mod openapi;
mod replay;
