//! What signet-local tells the user while it installs and runs a model server: progress and
//! warnings, on stderr and as `tracing` events, and text cut to fit in a message.

/// A step of progress, on stderr and as a `tracing` event.
pub(crate) fn progress(message: &str) {
    eprintln!("[signet-local] {message}");
    tracing::info!("{message}");
}

/// A warning, on stderr and as a `tracing` event.
pub(crate) fn warn(message: &str) {
    eprintln!("[signet-local] warning: {message}");
    tracing::warn!("{message}");
}

/// Cuts `text` to at most `max` bytes, at a character boundary; whether it was longer.
pub(crate) fn cut_at_char(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_a_character_boundary() {
        let mut short = "abc".to_owned();
        assert!(!cut_at_char(&mut short, 3));
        assert_eq!(short, "abc");
        let mut wide = "aé€".to_owned(); // 1 + 2 + 3 bytes
        assert!(cut_at_char(&mut wide, 5));
        assert_eq!(wide, "aé");
        assert!(cut_at_char(&mut wide, 2));
        assert_eq!(wide, "a");
    }
}
