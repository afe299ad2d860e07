//! Integration tests of the simulator.
