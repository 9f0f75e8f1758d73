pub mod check;
pub mod model;
pub mod runtime;
pub mod scenario;
pub mod sim;
pub mod trace;
