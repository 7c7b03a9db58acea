//! Which stream paths this node holds (`docs/PROTOCOL.md` §13.2), sans-IO: no Redis, no HTTP.
//!
//! A path is held while at least one request this node serves on it is alive (waiting, or its
//! response still streaming). The entry of a path carries the claim value this node writes to
//! Redis for it, `{id}:{epoch}`, fixed for the entry's life: concurrent requests claim with the
//! same value, and a release of an earlier entry (a later epoch's claim may already be in
//! Redis) never deletes a later one. One lock, never held across an `.await`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// A claim this node has to drop from Redis: the path and the value it claimed it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub path: String,
    pub value: String,
}

/// Where a dropped [`Hold`] sends the claim to release (the cluster's background task).
pub type Releaser = Box<dyn Fn(Release) + Send + Sync>;

struct Entry {
    count: usize,
    value: String,
    /// Redis confirmed the claim (the claim script answered "yours"). Requests on an
    /// unconfirmed entry ask Redis themselves.
    confirmed: bool,
}

struct Inner {
    node_id: String,
    paths: Mutex<Table>,
    release: Releaser,
}

#[derive(Default)]
struct Table {
    entries: HashMap<String, Entry>,
    next_epoch: u64,
}

/// The table. Cheap to clone.
#[derive(Clone)]
pub struct Holds(Arc<Inner>);

/// Keeps a path held while alive; dropping the last one releases the claim.
pub struct Hold {
    holds: Holds,
    path: String,
}

/// What [`Holds::begin`] found.
pub enum Begin {
    /// The path is held and its claim confirmed: serve it here.
    Held(Hold),
    /// Ask Redis to claim the path with `value`; then [`Holds::confirm`] (yours) or drop the
    /// hold (another node owns it).
    Claim { hold: Hold, value: String },
}

impl Holds {
    pub fn new(node_id: String, release: Releaser) -> Holds {
        Holds(Arc::new(Inner {
            node_id,
            paths: Mutex::new(Table::default()),
            release,
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.0.paths.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a hold on `path` for a request that may be served here.
    pub fn begin(&self, path: &str) -> Begin {
        let mut t = self.lock();
        let t = &mut *t;
        let entry = match t.entries.get_mut(path) {
            Some(e) => e,
            None => {
                t.next_epoch += 1;
                let value = format!("{}:{}", self.0.node_id, t.next_epoch);
                t.entries.entry(path.to_string()).or_insert(Entry {
                    count: 0,
                    value,
                    confirmed: false,
                })
            }
        };
        entry.count += 1;
        let hold = Hold {
            holds: self.clone(),
            path: path.to_string(),
        };
        if entry.confirmed {
            Begin::Held(hold)
        } else {
            let value = entry.value.clone();
            Begin::Claim { hold, value }
        }
    }

    /// Redis made `value` the claim of `path`: later requests are served without asking.
    pub fn confirm(&self, path: &str, value: &str) {
        if let Some(e) = self.lock().entries.get_mut(path) {
            if e.value == value {
                e.confirmed = true;
            }
        }
    }

    /// Redis holds another node's claim on `path` (a refresh found it): new requests ask Redis
    /// (and are forwarded to that node); the requests being served here go on.
    pub fn lost(&self, path: &str, value: &str) {
        if let Some(e) = self.lock().entries.get_mut(path) {
            if e.value == value {
                e.confirmed = false;
            }
        }
    }

    /// The confirmed claims to refresh: (path, value).
    pub fn confirmed(&self) -> Vec<(String, String)> {
        self.lock()
            .entries
            .iter()
            .filter(|(_, e)| e.confirmed)
            .map(|(p, e)| (p.clone(), e.value.clone()))
            .collect()
    }

    /// How many paths are held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    fn end(&self, path: &str) {
        let released = {
            let mut t = self.lock();
            let Some(e) = t.entries.get_mut(path) else {
                return;
            };
            e.count -= 1;
            if e.count > 0 {
                return;
            }
            let Some(e) = t.entries.remove(path) else {
                return;
            };
            // An entry never confirmed has nothing in Redis to release (another node's claim
            // was there).
            e.confirmed.then_some(e.value)
        };
        if let Some(value) = released {
            (self.0.release)(Release {
                path: path.to_string(),
                value,
            });
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.holds.end(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> (Holds, Arc<Mutex<Vec<Release>>>) {
        let released = Arc::new(Mutex::new(Vec::new()));
        let r = released.clone();
        let holds = Holds::new(
            "n1".into(),
            Box::new(move |rel| r.lock().unwrap().push(rel)),
        );
        (holds, released)
    }

    fn claim(b: Begin) -> (Hold, String) {
        match b {
            Begin::Claim { hold, value } => (hold, value),
            Begin::Held(_) => panic!("expected a claim"),
        }
    }

    #[test]
    fn first_request_claims_later_ones_are_held_and_the_last_releases() {
        let (h, released) = table();
        let (a, value) = claim(h.begin("/p"));
        assert_eq!(value, "n1:1");
        h.confirm("/p", &value);
        let Begin::Held(b) = h.begin("/p") else {
            panic!("a confirmed path is held")
        };
        drop(a);
        assert!(released.lock().unwrap().is_empty(), "one hold is left");
        drop(b);
        assert_eq!(
            *released.lock().unwrap(),
            vec![Release {
                path: "/p".into(),
                value: "n1:1".into()
            }]
        );
        assert_eq!(h.len(), 0);
    }

    #[test]
    fn concurrent_claims_use_one_value_and_a_new_entry_a_new_epoch() {
        let (h, released) = table();
        let (a, v1) = claim(h.begin("/p"));
        let (b, v2) = claim(h.begin("/p"));
        assert_eq!(v1, v2, "both ask Redis with the same value");
        h.confirm("/p", &v1);
        drop((a, b));
        assert_eq!(released.lock().unwrap().len(), 1);
        let (_c, v3) = claim(h.begin("/p"));
        assert_ne!(v3, v1, "a release of n1:1 can't delete the new claim");
    }

    #[test]
    fn an_unconfirmed_path_releases_nothing() {
        let (h, released) = table();
        let (a, _) = claim(h.begin("/p"));
        drop(a); // another node owned it: forwarded
        assert!(released.lock().unwrap().is_empty());
        assert_eq!(h.len(), 0);
    }

    #[test]
    fn a_lost_claim_makes_new_requests_ask_again() {
        let (h, _) = table();
        let (_a, v) = claim(h.begin("/p"));
        h.confirm("/p", &v);
        assert_eq!(h.confirmed(), vec![("/p".to_string(), v.clone())]);
        h.lost("/p", &v);
        assert!(h.confirmed().is_empty());
        let (_b, v2) = claim(h.begin("/p"));
        assert_eq!(v2, v);
        h.confirm("/p", "n1:99"); // a stale answer for another value changes nothing
        assert!(h.confirmed().is_empty());
    }
}
