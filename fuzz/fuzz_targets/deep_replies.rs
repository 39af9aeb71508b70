//! Deep and long replies from a few bytes (see `signet_fuzz::deep_reply`): nesting to 250,000
//! levels, strings to 1 MB, torn or closed, in every adapter's format. Each parse runs on a
//! small stack (`signet_fuzz::SMALL_STACK`); an error is fine, an overflow or a panic is not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use signet::Signature;
use signet::adapter::{Adapter, ChatAdapter, JsonAdapter, XmlAdapter, value};
use signet_fuzz::Everything;

fuzz_target!(|data: &[u8]| {
    let (reply, adapter) = signet_fuzz::deep_reply(data);
    signet_fuzz::on_small_stack(|| {
        let signature = Everything::signature();
        let parsed = match adapter {
            0 => ChatAdapter::new().parse(signature, &reply),
            1 => JsonAdapter::new().parse(signature, &reply),
            _ => XmlAdapter::new().parse(signature, &reply),
        };
        if let Ok(outputs) = parsed {
            assert_eq!(outputs.len(), signature.outputs().len());
        }
        let _ = value::lenient_json(&reply);
        for field in signature.outputs() {
            let _ = value::parse_text(field, &reply);
        }
    });
});
