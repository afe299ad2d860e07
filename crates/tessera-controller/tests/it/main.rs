//! Integration tests of the controller crate: the API's description, and the
//! state machine's replay.

mod openapi;
mod replay;
