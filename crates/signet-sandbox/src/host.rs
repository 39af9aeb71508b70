//! What the host puts into a run's global scope: `console.log` (kept, within the output limit)
//! and the functions it granted.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use rquickjs::function::Rest;
use rquickjs::{Ctx, Exception, Function, Object, Value};

/// A function the host grants the code: a JSON argument in, a JSON value or a message out.
pub(crate) type HostFn =
    Arc<dyn Fn(serde_json::Value) -> Result<serde_json::Value, String> + Send + Sync>;

/// What the code printed, cut at the output limit.
#[derive(Debug, Default)]
pub(crate) struct Printed {
    pub(crate) text: String,
    pub(crate) cut: bool,
    pub(crate) limit: usize,
}

impl Printed {
    fn push_line(&mut self, line: &str) {
        if self.cut {
            return;
        }
        let room = self.limit.saturating_sub(self.text.len());
        if line.len() < room {
            self.text.push_str(line);
            self.text.push('\n');
        } else {
            let mut end = room;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&line[..end]);
            self.cut = true;
        }
    }
}

/// `value` as JSON text (`None` for what JSON cannot hold: `undefined`, a function).
pub(crate) fn json_text<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
) -> rquickjs::Result<Option<String>> {
    ctx.json_stringify(value)?
        .map(|text| text.to_string())
        .transpose()
}

/// Installs `console.log` (and `console.error`, the same) writing into `printed`.
pub(crate) fn install_console<'js>(
    ctx: &Ctx<'js>,
    printed: Rc<RefCell<Printed>>,
) -> rquickjs::Result<()> {
    let log = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, args: Rest<Value<'js>>| -> rquickjs::Result<()> {
            let mut words = Vec::with_capacity(args.0.len());
            for arg in args.0 {
                let word = match arg.as_string() {
                    Some(text) => text.to_string()?,
                    None => json_text(&ctx, arg)?.unwrap_or_else(|| "undefined".to_owned()),
                };
                words.push(word);
            }
            printed.borrow_mut().push_line(&words.join(" "));
            Ok(())
        },
    )?;
    let console = Object::new(ctx.clone())?;
    console.set("log", log.clone())?;
    console.set("error", log)?;
    ctx.globals().set("console", console)
}

/// Installs the granted function `name`: its argument goes to `host` as JSON (`null` when
/// none), its result comes back as a value; its error is thrown as an `Error` naming it.
pub(crate) fn install_grant<'js>(ctx: &Ctx<'js>, name: &str, host: HostFn) -> rquickjs::Result<()> {
    let called = name.to_owned();
    let function = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, args: Rest<Value<'js>>| -> rquickjs::Result<Value<'js>> {
            let argument = match args.0.into_iter().next() {
                Some(value) => match json_text(&ctx, value)? {
                    Some(text) => serde_json::from_str(&text).map_err(|error| {
                        Exception::throw_type(
                            &ctx,
                            &format!("{called}: the argument is not JSON: {error}"),
                        )
                    })?,
                    None => serde_json::Value::Null,
                },
                None => serde_json::Value::Null,
            };
            // A host function that panics fails this call, not the run's thread.
            let answered =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| host(argument)))
                    .unwrap_or_else(|_| Err("the host function panicked".to_owned()));
            match answered {
                Ok(result) => ctx.json_parse(result.to_string()),
                Err(message) => Err(Exception::throw_message(
                    &ctx,
                    &format!("{called}: {message}"),
                )),
            }
        },
    )?;
    ctx.globals().set(name, function)
}
