//! One instant of a driver's clock: the order in which the engine sees what
//! happens at it. Every driver (the simulator, the live controller, the
//! benches, the tests' replays) goes through [`step`], so the order is written
//! once:
//!
//! 1. the completions ([`Input::Complete`]): jobs that ended by this instant
//!    give back what they hold before anything else is decided;
//! 2. everything else in the order given: arrivals ([`Input::Submit`]) in
//!    submission order, node changes, users' and operators' requests;
//! 3. if the driver asks for it, a pass; then every input the driver has due
//!    at the same instant (the simulator: the end of a job the pass killed, or
//!    of a zero-length job), and another pass, for as long as there are any or
//!    the engine asks to be woken at this instant.
//!
//! After each input, the driver carries out its effects ([`Driver::effect`])
//! and hands over what they made due at once ([`Driver::due`]: the controller,
//! the end of a job whose node nobody runs any more), which the engine sees
//! before the next input.

use crate::contract::{Effect, Input};
use crate::engine::Engine;
use crate::Time;

/// What a driver does with the engine's effects, and what it has to tell the
/// engine at an instant.
pub trait Driver {
    /// Carry out (or record) an effect of an input at `now`; `engine` is in
    /// the state that input left.
    fn effect(&mut self, engine: &Engine, now: Time, effect: Effect);

    /// Inputs that have become due at `now` since the last call (asked after
    /// every input's effects and after every pass's).
    fn due(&mut self, _now: Time, _inputs: &mut Vec<Input>) {}

    /// A pass begins at `now`.
    fn pass_begins(&mut self, _engine: &Engine, _now: Time) {}

    /// The pass is made (its effects not yet carried out): an input to follow
    /// it at once. The simulator charges PARM's decision time so
    /// ([`Input::DecisionTime`]).
    fn pass_made(&mut self, _now: Time) -> Option<Input> {
        None
    }

    /// The pass and its follow-up are made: their effects, before the driver
    /// carries them out (tests check invariants here).
    fn passed(&mut self, _engine: &Engine, _now: Time, _effects: &[Effect]) {}
}

/// Everything that happens at `now`, in the engine's order (see the module
/// documentation). Returns the passes made.
pub fn step(
    engine: &mut Engine,
    now: Time,
    inputs: impl IntoIterator<Item = Input>,
    pass: bool,
    driver: &mut impl Driver,
) -> u64 {
    let (mut fx, mut due, mut rest) = std::mem::take(&mut engine.step_bufs);
    // the latest wake-up asked for is at `now` (a pass consumes it)
    let mut wake_now = false;
    for input in inputs {
        if matches!(input, Input::Complete { .. }) {
            feed(engine, now, input, driver, &mut fx, &mut due, &mut wake_now);
        } else {
            rest.push(input);
        }
    }
    for input in rest.drain(..) {
        feed(engine, now, input, driver, &mut fx, &mut due, &mut wake_now);
    }
    let mut passes = 0;
    while pass {
        wake_now = false;
        driver.pass_begins(engine, now);
        engine.handle(now, Input::Pass, &mut fx);
        if let Some(input) = driver.pass_made(now) {
            engine.handle(now, input, &mut fx);
        }
        passes += 1;
        driver.passed(engine, now, &fx);
        carry_out(engine, now, driver, &mut fx, &mut wake_now);
        let more = handle_due(engine, now, driver, &mut fx, &mut due, &mut wake_now);
        if !more && !wake_now {
            break;
        }
    }
    // all three are empty again: effects are carried out and inputs handled
    engine.step_bufs = (fx, due, rest);
    passes
}

/// Handle one input, carry out its effects, then whatever they made due.
fn feed(
    engine: &mut Engine,
    now: Time,
    input: Input,
    driver: &mut impl Driver,
    fx: &mut Vec<Effect>,
    due: &mut Vec<Input>,
    wake_now: &mut bool,
) {
    engine.handle(now, input, fx);
    carry_out(engine, now, driver, fx, wake_now);
    handle_due(engine, now, driver, fx, due, wake_now);
}

/// Handle what the driver has due at `now`, and what that makes due in turn;
/// returns whether there was any.
fn handle_due(
    engine: &mut Engine,
    now: Time,
    driver: &mut impl Driver,
    fx: &mut Vec<Effect>,
    due: &mut Vec<Input>,
    wake_now: &mut bool,
) -> bool {
    let mut any = false;
    loop {
        driver.due(now, due);
        if due.is_empty() {
            return any;
        }
        any = true;
        // (the list is handed back empty, its room kept, before the driver
        // is asked again)
        let mut list = std::mem::take(due);
        for input in list.drain(..) {
            engine.handle(now, input, fx);
            carry_out(engine, now, driver, fx, wake_now);
        }
        *due = list;
    }
}

fn carry_out(
    engine: &Engine,
    now: Time,
    driver: &mut impl Driver,
    fx: &mut Vec<Effect>,
    wake_now: &mut bool,
) {
    for e in fx.drain(..) {
        if let Effect::WakeAt(t) = e {
            *wake_now = t <= now;
        }
        driver.effect(engine, now, e);
    }
}
