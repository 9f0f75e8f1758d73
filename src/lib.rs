pub mod check;
pub mod cli;
pub mod model;
pub mod runtime;
pub mod scenario;
pub mod sim;
pub mod suite;
pub mod trace;
