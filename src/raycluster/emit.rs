//! The scenario text: a header saying where it came from and what was not mapped, one node type
//! per planned group, and the cluster (a rack per group, a slice per TPU replica, the head).
//! The text is put in canonical form by the formatter (`orrery fmt`) and loaded before it is
//! returned, so that what the import writes always checks.

use super::plan::{Body, Plan, fmt_num, nic_for};
use super::{Failure, Imported, Options, Source, Warning, Workers};
use crate::syntax::fmt::quote;
use std::fmt::Write;

pub fn emit(src: &Source, plans: Vec<Plan>, opts: &Options) -> Result<Imported, Failure> {
    let mut warnings: Vec<Warning> = Vec::new();
    for p in &plans {
        for (at, w) in &p.warnings {
            warnings.push(Warning {
                at: *at,
                message: format!("`{}`: {w}", one_line(&p.group.name)),
            });
        }
    }
    let built: Vec<&Plan> = plans.iter().filter(|p| p.body.is_some()).collect();
    let nodes: u64 = built.iter().map(|p| p.group.count).sum();
    if built.is_empty() {
        return Err(Failure::Unmapped {
            warnings,
            message: "nothing in the YAML maps to the catalog: no node type has a known instance type or a CPU count".into(),
        });
    }
    if nodes == 0 {
        return Err(Failure::Unmapped {
            warnings,
            message: "every node type's count is 0, so the cluster would have no node (try `--workers max`)".into(),
        });
    }
    let mut t = String::new();
    header(&mut t, src, opts, &warnings);
    nics(&mut t, &built);
    for p in &built {
        node_type(&mut t, p);
    }
    cluster(&mut t, src, opts, &plans);
    let text = canonical(&t).map_err(|m| Failure::Unmapped {
        warnings: warnings.clone(),
        message: m,
    })?;
    Ok(Imported {
        text,
        warnings,
        nodes,
    })
}

/// The Ethernet NICs the nodes use that the catalog lacks, each at its provider's figure.
fn nics(t: &mut String, built: &[&Plan]) {
    let mut speeds: Vec<u32> = built.iter().flat_map(|p| p.declare.clone()).collect();
    speeds.sort_unstable();
    speeds.dedup();
    for m in speeds {
        let (name, _) = nic_for(m);
        let _ = writeln!(
            t,
            "# A cloud VM's Ethernet at its provider's published per-VM bandwidth (no RDMA).\nnic {name} {{\n  vendor generic\n  model \"{m} Mbps cloud Ethernet\"\n  speed {m} Mbps\n  protocol ethernet\n  rdma false\n  gpudirect false\n  source \"the instance type's published network bandwidth (see each node's source)\"\n}}\n"
        );
    }
}

fn header(t: &mut String, src: &Source, opts: &Options, warnings: &[Warning]) {
    let provider = src
        .provider
        .as_deref()
        .map(|p| format!(", provider {}", one_line(p)))
        .unwrap_or_default();
    let _ = writeln!(
        t,
        "# Imported by `orrery import ray-cluster` from {} ({}{provider}).",
        one_line(&opts.file_name),
        src.form
    );
    let (counted, flag) = match opts.workers {
        Workers::Min => (
            "its minimum (min_workers; KubeRay: replicas)",
            "`--workers max` imports the maximum",
        ),
        Workers::Max => (
            "its maximum (max_workers; KubeRay: maxReplicas)",
            "without `--workers max` the minimum is imported",
        ),
    };
    let _ = writeln!(
        t,
        "# Each worker node type has {counted} nodes, the head one."
    );
    let _ = writeln!(
        t,
        "# Ray's autoscaling between the two is not simulated (the language has no autoscaling):"
    );
    let _ = writeln!(t, "# edit the counts; {flag}.");
    for n in &src.notes {
        let _ = writeln!(t, "# Note: {}.", one_line(n));
    }
    if !warnings.is_empty() {
        let _ = writeln!(t, "# Not mapped (each also printed as a warning):");
        for w in warnings {
            let _ = writeln!(
                t,
                "#   - {}:{}: {}",
                w.at.line,
                w.at.col,
                one_line(&w.message)
            );
        }
    }
    t.push('\n');
}

fn node_type(t: &mut String, p: &Plan) {
    let g = &p.group;
    let role = if g.head {
        "Ray head node type"
    } else {
        "Ray node type"
    };
    let _ = writeln!(
        t,
        "# {role} `{}`: {}.",
        one_line(&g.name),
        one_line(&p.what)
    );
    if let Some(r) = &g.range {
        let _ = writeln!(t, "# Autoscaling range in the YAML: {}.", one_line(r));
    }
    match p.body.as_ref().expect("only built plans are written") {
        Body::From(base) => {
            let _ = writeln!(t, "node {} from {base} {{", p.ident);
        }
        Body::Full {
            vcpus,
            sockets,
            memory,
            device,
            nic,
            source,
        } => {
            let _ = writeln!(t, "node {} {{", p.ident);
            // Cloud vCPUs are threads; the catalog counts two per core (SMT-2) where even.
            let cores = if vcpus % 2 == 0 && *vcpus >= 2 * u64::from(*sockets) {
                vcpus / 2
            } else {
                *vcpus
            };
            let sockets = if cores % u64::from(*sockets) == 0 {
                *sockets
            } else {
                1
            };
            let _ = writeln!(t, "  cpu sockets {sockets}, cores {cores}, threads {vcpus}");
            let _ = writeln!(t, "  memory {memory}");
            if let Some((a, n, link)) = device {
                let _ = writeln!(t, "  device {a} x {n} link {link}");
            }
            match nic {
                Some((nic, n)) => {
                    let _ = writeln!(t, "  nic {nic} x {n} role compute");
                }
                None => {
                    let _ = writeln!(
                        t,
                        "  # No NIC: the machine's network is not known, so this node has no link to the fabric (add a `nic` line)."
                    );
                }
            }
            if let Some(s) = source {
                let _ = writeln!(t, "  source {}", quote(&one_line(s)));
            }
        }
    }
    if !p.labels.is_empty() {
        let entries: Vec<String> = p
            .labels
            .iter()
            .map(|(k, v)| format!("{}: {}", quote(&one_line(k)), quote(&one_line(v))))
            .collect();
        let _ = writeln!(t, "  labels {{ {} }}", entries.join(", "));
    }
    if !p.resources.is_empty() {
        let entries: Vec<String> = p
            .resources
            .iter()
            .map(|(k, v)| format!("{}: {}", quote(&one_line(k)), fmt_num(*v)))
            .collect();
        let _ = writeln!(t, "  resources {{ {} }}", entries.join(", "));
    }
    let _ = writeln!(t, "}}\n");
}

fn cluster(t: &mut String, src: &Source, opts: &Options, plans: &[Plan]) {
    let name = opts
        .name
        .clone()
        .or(src.name.clone())
        .unwrap_or_else(|| "ray".into());
    let ident = super::plan::identifier(&name);
    let _ = writeln!(t, "cluster {ident} {{");
    let _ = writeln!(
        t,
        "  # Assumption: the YAML says nothing of the network between machines; a non-blocking"
    );
    let _ = writeln!(
        t,
        "  # leaf-spine fabric joins the racks (edit it, see the grammar's section 3.5)."
    );
    let _ = writeln!(t, "  fabric leaf_spine");
    // The head's rack first: Ray's head is the cluster's first node unless `head` says otherwise.
    let mut order: Vec<&Plan> = plans.iter().filter(|p| p.body.is_some()).collect();
    order.sort_by_key(|p| !p.group.head);
    let mut head = None;
    for p in order {
        let g = &p.group;
        if g.count == 0 {
            let _ = writeln!(
                t,
                "  # `{}`: no nodes at this end of its range.",
                one_line(&g.name)
            );
            continue;
        }
        match &p.slice {
            Some(topo) => {
                let names = if g.replicas == 1 {
                    p.ident.clone()
                } else {
                    format!("{}[0..{}]", p.ident, g.replicas - 1)
                };
                let _ = writeln!(
                    t,
                    "  # `{}`: {} slices of {} hosts.",
                    one_line(&g.name),
                    g.replicas,
                    g.hosts
                );
                let _ = writeln!(t, "  slice {names} node {} topology {topo}", p.ident);
            }
            None => {
                let _ = writeln!(t, "  rack {} {{", p.ident);
                let _ = writeln!(t, "    node {} x {}", p.ident, g.count);
                let _ = writeln!(t, "  }}");
                if g.head && head.is_none() {
                    head = Some(format!("{}.n0", p.ident));
                }
            }
        }
    }
    if let Some(h) = head {
        let _ = writeln!(t, "  head {h}");
    }
    let _ = writeln!(t, "}}");
}

/// Text on one line with no control characters, for comments and strings.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Formatted with `orrery fmt`'s rules, and loaded: an error here is the import's bug.
fn canonical(t: &str) -> Result<String, String> {
    let (tree, diags) = crate::syntax::parse(t, 0);
    if let Some(d) = diags.first() {
        return Err(format!(
            "the scenario written does not parse ({}); this is a bug in the import",
            d.message
        ));
    }
    let text = crate::syntax::fmt::format(&tree)
        .map_err(|_| "the formatter refused a comment; this is a bug in the import".to_string())?;
    let l = crate::load_str("<import>", &text);
    if let Some(d) = l
        .diags
        .iter()
        .find(|d| d.severity == crate::diag::Severity::Error)
    {
        return Err(format!(
            "the scenario written does not check ({}); this is a bug in the import",
            d.message
        ));
    }
    Ok(text)
}
