//! A check of the solver's bookkeeping against its flows, for tests: the class lists, the
//! links' classes, loads and bounds, and feasibility, recomputed from scratch.

use std::collections::BTreeMap;

use super::classes::NONE;
use super::flows::FlowNet;

impl FlowNet {
    /// Check the solver's bookkeeping against its flows (for tests): every class's link
    /// counts, every tracked link's classes and load, the bounds, and feasibility.
    #[doc(hidden)]
    pub fn audit(&self) -> Result<(), String> {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
        for (ci, c) in self.classes.iter().enumerate() {
            if !c.alive {
                continue;
            }
            let mut tr: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
            let mut sl: BTreeMap<u32, u32> = BTreeMap::new();
            for &f in &c.members {
                if self.class_of[f as usize] != ci as u32 || !self.flows[f as usize].alive {
                    return Err(format!("class {ci}: member {f} is not its"));
                }
                for &(l, m) in &self.flows[f as usize].links {
                    if self.tracked[l as usize] {
                        let e = tr.entry(l).or_default();
                        e.0 += m;
                        e.1 += 1;
                    } else {
                        *sl.entry(l).or_default() += m;
                    }
                }
            }
            let mut t: Vec<(u32, (u32, u32))> = c
                .tracked
                .items
                .iter()
                .map(|e| (e.link, (e.crossings, e.flows)))
                .collect();
            t.sort_unstable();
            if t != tr.into_iter().collect::<Vec<_>>() || !c.tracked.consistent() {
                return Err(format!("class {ci}: tracked list differs"));
            }
            let mut sv: Vec<(u32, u32)> = c
                .slack
                .items
                .iter()
                .map(|e| (e.link, e.crossings))
                .collect();
            sv.sort_unstable();
            if sv != sl.into_iter().collect::<Vec<_>>() || !c.slack.consistent() {
                return Err(format!("class {ci}: slack list differs"));
            }
            if c.members.is_empty() {
                return Err(format!("class {ci}: alive and empty"));
            }
            if c.bottleneck != NONE && !self.held[c.bottleneck as usize].contains(&(ci as u32)) {
                return Err(format!("class {ci}: not held at its bottleneck"));
            }
        }
        for l in 0..self.capacity.len() {
            let load = self.load(l);
            if load > self.capacity[l] * (1.0 + 1e-9) + 1e-9 {
                return Err(format!(
                    "link {l} (tracked {}): load {load} over capacity {}",
                    self.tracked[l], self.capacity[l]
                ));
            }
            if self.tracked[l] {
                if !close(self.load[l], load) {
                    return Err(format!("link {l}: kept load {} vs {load}", self.load[l]));
                }
                let mut want: BTreeMap<u32, u32> = BTreeMap::new();
                for &f in &self.on_link[l] {
                    let m = self.multiplicity(f as usize, l);
                    *want.entry(self.class_of[f as usize]).or_default() += m;
                }
                let mut have = self.classes_on[l].clone();
                have.sort_unstable();
                if have != want.into_iter().collect::<Vec<_>>() {
                    return Err(format!("link {l}: classes_on differs"));
                }
                for &(c, _) in &self.classes_on[l] {
                    if self.classes[c as usize].rate > self.fastest[l] * (1.0 + 1e-12) {
                        return Err(format!("link {l}: class {c} faster than the bound"));
                    }
                }
            } else if !close(self.load[l], load) {
                return Err(format!(
                    "slack link {l}: kept load {} vs {load}",
                    self.load[l]
                ));
            }
        }
        Ok(())
    }
}
