//! Output checks: typed functions over a module's answer (and an agent's trajectory) that accept
//! it or say what is wrong, so that the module re-asks the model with the message.

pub mod figures;
pub mod repetition;
