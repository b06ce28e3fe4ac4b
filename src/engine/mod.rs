//! The event-driven simulator (pure Rust, no pyo3): an op program of the
//! schedule IR (docs/ir.md) run on a modelled network.
//!
//! - [`program`]: the columns the engine reads, message matching, successors;
//! - [`core`]: the event loop, written once (CPU per rank, eager /
//!   rendezvous / detached sends, the injection window, background
//!   traffic, traces), generic over an op store: [`run`] (the whole program)
//!   or [`stream`] (a window of rounds pulled as the run needs them);
//! - [`fabric`]: the network seam, and its four models:
//!   [`loggops`] (LogGOPS with link reservations), [`flow`] (max-min fluid
//!   flows, or SimGrid's CM02), [`congestion`] (the ORCS-style congestion
//!   model of the network-noise paper) and [`packet`] (packets through
//!   finite credit-controlled buffers, virtual cut-through);
//! - [`noise`]: OS-noise detours;
//! - [`traffic`]: open-loop synthetic traffic (BookSim's patterns) over any fabric.
//!
//! Time is integer picoseconds; events sit in one heap keyed by
//! `(time, sequence)`; there is no global state, so simulations run
//! side by side (the sweep runs them on threads).

pub mod adaptive;
pub mod config;
pub mod congestion;
pub mod core;
pub mod fabric;
pub mod flow;
pub mod lockstep;
pub mod loggops;
pub mod noise;
pub mod packet;
pub mod program;
pub mod run;
pub mod stream;
pub mod traffic;
pub mod ugal;

use crate::error::CoreError;
use crate::routing::Router;

/// [`run::Routes`] answered by a static routing engine.
#[derive(Clone)]
pub struct RouterRoutes<'a> {
    router: &'a Router,
    cache: crate::routing::UdCache,
}

impl<'a> RouterRoutes<'a> {
    pub fn new(router: &'a Router) -> Self {
        RouterRoutes {
            router,
            cache: Default::default(),
        }
    }
}

impl run::Routes for RouterRoutes<'_> {
    fn route(
        &mut self,
        src: u32,
        dst: u32,
        links: &mut Vec<u32>,
        weights: &mut Vec<f64>,
    ) -> Result<(), CoreError> {
        self.router
            .route_one(src, dst, links, weights, &mut self.cache)
    }
}
