//! How the scheduler sees a kind of work. Task groups, actors and service replicas each
//! answer for their own items ([`Schedulable`], implemented beside each component), so
//! `scheduling` submits, queues and explains every kind the same way, through
//! [`Sim::component`], without reading any component's fields.
//!
//! Architecture invariant: answers only; nothing here allocates, queues or schedules.

use super::{Sim, Work, World};
use crate::placement::Request;
use crate::scenario::Spec;
use crate::scenario::workload::{LabelConstraint, Policy, Strategy};

/// What one item asks the placement policy for. The request is the item's own copy; the
/// strategy and label selectors are the scenario's.
pub(super) struct Ask<'s> {
    pub(super) request: Request,
    pub(super) strategy: &'s Strategy,
    pub(super) selector: &'s [LabelConstraint],
    /// Ray's `fallback_strategy`: label selectors tried in order after `selector`.
    pub(super) fallbacks: &'s [Vec<LabelConstraint>],
    pub(super) tenant: Option<usize>,
    pub(super) policy: Policy,
}

/// A component whose items the scheduler places: each item waits, FIFO, with the others of
/// its class (a task group, an actor group, a service).
pub(super) trait Schedulable {
    /// The class item `id` waits with, by the class's index in this component.
    fn class_of(&self, id: u32) -> u32;
    /// The tenant whose work class `class` is.
    fn class_tenant(&self, class: u32) -> Option<usize>;
    /// What item `id` asks the placement policy for.
    fn ask<'s>(&self, spec: &'s Spec, id: u32) -> Ask<'s>;
    /// `workload.item` of item `id` (what `--explain` names).
    fn item_name(&self, spec: &Spec, id: u32) -> String;
    /// Items of class `class` wait whatever is free (a task group whose lost inputs are
    /// being rebuilt).
    fn class_blocked(&self, class: u32) -> bool {
        let _ = class;
        false
    }

    /// Item `id` waits even when the policy finds no node that could hold it (a task
    /// rebuilding a lost output: its inputs' holders may come back).
    fn always_waits(&self, id: u32) -> bool {
        let _ = id;
        false
    }

    /// The policy found no node that could ever hold item `id`: count it.
    fn infeasible(&mut self, world: &mut World<'_>, id: u32);
}

impl<'s> Sim<'s> {
    /// The component that owns `w`, and `w`'s id there.
    pub(super) fn component(&self, w: Work) -> (&dyn Schedulable, u32) {
        match w {
            Work::Task(t) => (&self.tasks, t),
            Work::Actor(a) => (&self.actors, a),
            Work::Replica(r) => (&self.services, r),
        }
    }

    /// The class of a piece of work (as a [`Work`] naming the class) and its id within the
    /// class's queue.
    pub(super) fn class_key(&self, w: Work) -> (Work, u32) {
        let (c, id) = self.component(w);
        let class = c.class_of(id);
        let key = match w {
            Work::Task(_) => Work::Task(class),
            Work::Actor(_) => Work::Actor(class),
            Work::Replica(_) => Work::Replica(class),
        };
        (key, id)
    }

    /// The tenant of a class of work (`key` as [`Sim::class_key`] gives it).
    pub(super) fn class_tenant(&self, key: Work) -> Option<usize> {
        let (c, class) = self.component(key);
        c.class_tenant(class)
    }

    /// `workload.item` of a piece of work.
    pub(super) fn item_name(&self, w: Work) -> String {
        let (c, id) = self.component(w);
        c.item_name(self.w.spec, id)
    }

    /// `w` waits even when no node could hold it ([`Schedulable::always_waits`]).
    pub(super) fn always_waits(&self, w: Work) -> bool {
        let (c, id) = self.component(w);
        c.always_waits(id)
    }

    /// What a piece of work asks the placement policy for.
    pub(super) fn ask(&self, w: Work) -> Ask<'s> {
        let (c, id) = self.component(w);
        c.ask(self.w.spec, id)
    }
}
