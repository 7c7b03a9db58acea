//! The options object of `send`/`receive`/`connect`/`openWriter`/`openReader`
//! (`docs/js-api.md`): plain fields read member by member, `signal` and `onProgress` as JS
//! objects.

use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::AbortSignal;

use crate::client::consumer::ReceiveConfig;
use crate::client::error::Error;
use crate::client::options::{
    consumer_receipt, declared_size, positive_seconds, receipt_config, resume_seconds,
    ReceiptOption, ResumeOption,
};
use crate::client::parts::part_size;
use crate::client::producer::{Metadata, SendConfig};
use crate::client::rate::Progress;
use crate::client::resume::window_size;
use crate::client::transport::{RuntimeStreams, UploadCut, UploadMode};
use crate::client::urls::RelayBase;

/// The plain members (JS names in camelCase). Read by [`Options::from_js`], not serde: the
/// reader is a few lines, `serde-wasm-bindgen` was ~10 KB of the module (issue #27).
#[derive(Debug, Default)]
pub struct Options {
    pub relay: Option<String>,
    pub path: Option<String>,
    pub token: Option<String>,
    pub rendezvous: Option<bool>,
    /// Seconds.
    pub timeout: Option<f64>,
    pub mode: Option<String>,
    pub content_type: Option<String>,
    pub filename: Option<String>,
    /// Bytes of plaintext, when known (progress total).
    pub size: Option<f64>,
    pub upload: Option<String>,
    pub part_size: Option<f64>,
    pub passphrase: Option<String>,
    pub recipients: Option<Vec<String>>,
    pub identities: Option<Vec<String>>,
    pub format: Option<String>,
    /// `send`: seconds to wait for the receiver's receipt (§12.2).
    pub receipt_timeout: Option<f64>,
    /// `send`: bytes of the replay window (§12.3).
    pub resume_window: Option<f64>,
    /// `receive` without keys: hand out an encrypted stream's ciphertext (§11.3 step 5).
    pub ciphertext: Option<bool>,
}

/// Parsed options plus the JavaScript-only members.
pub struct Parsed {
    pub o: Options,
    pub signal: Option<AbortSignal>,
    pub on_progress: Option<Function>,
    pub receipt: ReceiptOption,
    /// Seconds to keep trying to resume after a break (§12.3); `None`: `resume: false`.
    pub resume_s: Option<f64>,
    /// Bytes of the producer's replay window (§12.3).
    pub resume_window: usize,
}

impl Parsed {
    pub fn from_js(options: &JsValue) -> Result<Parsed, Error> {
        if !options.is_object() {
            return Err(usage("options must be an object like { relay, path }"));
        }
        let o = Options::from_js(options)?;
        let signal = member(options, "signal")
            .map(|v| {
                v.dyn_into::<AbortSignal>()
                    .map_err(|_| usage("`signal` must be an AbortSignal"))
            })
            .transpose()?;
        let on_progress = member(options, "onProgress")
            .map(|v| {
                v.dyn_into::<Function>()
                    .map_err(|_| usage("`onProgress` must be a function"))
            })
            .transpose()?;
        positive_seconds("timeout", o.timeout)?;
        positive_seconds("receiptTimeout", o.receipt_timeout)?;
        declared_size(o.size)?;
        let receipt = match member(options, "receipt") {
            None => ReceiptOption::Auto,
            Some(v) if v.as_bool() == Some(true) => ReceiptOption::Auto,
            Some(v) if v.as_bool() == Some(false) => ReceiptOption::Off,
            Some(v) if v.as_string().as_deref() == Some("manual") => ReceiptOption::Manual,
            Some(v) if v.as_string().as_deref() == Some("ciphertext") => ReceiptOption::Ciphertext,
            Some(_) => {
                return Err(usage(
                    "`receipt` must be true, false, 'manual' (receive) or 'ciphertext' (send)",
                ))
            }
        };
        let resume_s = resume_seconds(member(options, "resume").map(|v| match v.as_bool() {
            Some(on) => ResumeOption::Flag(on),
            None => ResumeOption::Seconds(v.as_f64().unwrap_or(f64::NAN)),
        }))?;
        let resume_window = window_size(o.resume_window)?;
        Ok(Parsed {
            o,
            signal,
            on_progress,
            receipt,
            resume_s,
            resume_window,
        })
    }

    pub fn relay(&self) -> Result<RelayBase, Error> {
        let relay = self
            .o
            .relay
            .as_deref()
            .ok_or_else(|| usage("`relay` is required, e.g. \"https://relay.example\""))?;
        RelayBase::parse(relay)
    }

    /// The producer's configuration for the core, with what the runtime can stream and what
    /// cuts its uploads (§10).
    pub fn send_config(
        &self,
        runtime_streams: RuntimeStreams,
        upload_cut: UploadCut,
    ) -> Result<SendConfig, Error> {
        Ok(SendConfig {
            relay: self.relay()?,
            path: self.path()?.to_string(),
            token: self.o.token.clone(),
            rendezvous: self.rendezvous(),
            timeout_s: self.o.timeout,
            upload: UploadMode::parse(self.o.upload.as_deref())?,
            part_size: part_size(self.o.part_size)?,
            meta: Metadata {
                content_type: self.o.content_type.clone(),
                filename: self.o.filename.clone(),
                size: self.size(),
            },
            encrypted: self.encrypted(),
            runtime_streams,
            upload_cut,
            receipt: receipt_config(
                self.receipt,
                ("receiptTimeout", self.o.receipt_timeout),
                self.resume_s,
            )?,
            resume_s: self.resume_s,
        })
    }

    /// The consumer's configuration for the core.
    pub fn receive_config(&self) -> Result<ReceiveConfig, Error> {
        Ok(ReceiveConfig {
            relay: self.relay()?,
            path: self.path()?.to_string(),
            token: self.o.token.clone(),
            rendezvous: self.rendezvous(),
            timeout_s: self.o.timeout,
            encrypted: self.encrypted(),
            size: self.size(),
            receipt: consumer_receipt(self.receipt)?,
            resume_s: self.resume_s,
            ciphertext: self.o.ciphertext.unwrap_or(false),
        })
    }

    /// The `size` option as whole bytes (checked by `from_js`: `declared_size`).
    pub fn size(&self) -> Option<u64> {
        declared_size(self.o.size).ok().flatten()
    }

    pub fn path(&self) -> Result<&str, Error> {
        self.o
            .path
            .as_deref()
            .ok_or_else(|| usage("`path` is required, e.g. \"/team/reports\""))
    }

    pub fn rendezvous(&self) -> bool {
        self.o.rendezvous.unwrap_or(true)
    }

    /// True when any encryption option is set (`recipients: []` too: the encryptor refuses it).
    pub fn encrypted(&self) -> bool {
        self.o.passphrase.is_some()
            || self.o.recipients.is_some()
            || self.o.identities.as_ref().is_some_and(|r| !r.is_empty())
    }

    /// Calls `onProgress` (errors thrown by it are ignored: progress must not break a transfer).
    pub fn report_progress(on_progress: &Option<Function>, p: Progress) {
        if let Some(f) = on_progress {
            let obj = Object::new();
            let _ = Reflect::set(&obj, &"bytes".into(), &(p.bytes as f64).into());
            if let Some(t) = p.total {
                let _ = Reflect::set(&obj, &"total".into(), &(t as f64).into());
            }
            let _ = Reflect::set(&obj, &"bytesPerSecond".into(), &p.bytes_per_second.into());
            let _ = Reflect::set(&obj, &"resumed".into(), &p.resumed.into());
            let _ = Reflect::set(&obj, &"reconnecting".into(), &p.reconnecting.into());
            let _ = f.call1(&JsValue::UNDEFINED, &obj);
        }
    }
}

impl Options {
    /// Reads the plain members of an options object. An absent, `undefined` or `null` member
    /// is unset; one of another type is `UNSUPPORTED` naming it; members it doesn't know are
    /// ignored. `undefined` / `null` options are empty ones.
    pub fn from_js(options: &JsValue) -> Result<Options, Error> {
        let text = |name: &str| -> Result<Option<String>, Error> {
            member(options, name)
                .map(|v| v.as_string().ok_or_else(|| must_be(name, "a string")))
                .transpose()
        };
        let number = |name: &str| -> Result<Option<f64>, Error> {
            member(options, name)
                .map(|v| v.as_f64().ok_or_else(|| must_be(name, "a number")))
                .transpose()
        };
        let flag = |name: &str| -> Result<Option<bool>, Error> {
            member(options, name)
                .map(|v| v.as_bool().ok_or_else(|| must_be(name, "true or false")))
                .transpose()
        };
        let texts = |name: &str| -> Result<Option<Vec<String>>, Error> {
            let Some(v) = member(options, name) else {
                return Ok(None);
            };
            let wrong = || must_be(name, "an array of strings");
            if !Array::is_array(&v) {
                return Err(wrong());
            }
            let all: Option<Vec<String>> = Array::from(&v).iter().map(|s| s.as_string()).collect();
            all.map(Some).ok_or_else(wrong)
        };
        Ok(Options {
            relay: text("relay")?,
            path: text("path")?,
            token: text("token")?,
            rendezvous: flag("rendezvous")?,
            timeout: number("timeout")?,
            mode: text("mode")?,
            content_type: text("contentType")?,
            filename: text("filename")?,
            size: number("size")?,
            upload: text("upload")?,
            part_size: number("partSize")?,
            passphrase: text("passphrase")?,
            recipients: texts("recipients")?,
            identities: texts("identities")?,
            format: text("format")?,
            receipt_timeout: number("receiptTimeout")?,
            resume_window: number("resumeWindow")?,
            ciphertext: flag("ciphertext")?,
        })
    }
}

fn must_be(name: &str, what: &str) -> Error {
    usage(&format!("`{name}` must be {what}"))
}

/// `obj[name]`, `None` when absent, `undefined` or `null` (unset, in every options object).
pub fn member(obj: &JsValue, name: &str) -> Option<JsValue> {
    Reflect::get(obj, &name.into())
        .ok()
        .filter(|v| !(v.is_undefined() || v.is_null()))
}

/// An `UNSUPPORTED` usage error.
pub fn usage(message: &str) -> Error {
    Error::usage(message)
}
