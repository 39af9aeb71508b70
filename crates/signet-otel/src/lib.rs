//! OpenTelemetry for Signet.
