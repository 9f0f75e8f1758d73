pub mod model;
pub mod runtime;
