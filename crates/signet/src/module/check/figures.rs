//! Figures (numbers with their units) read from text.
