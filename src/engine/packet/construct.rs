//! Building a [`PacketFabric`]: the configuration checked (one line per
//! refusal, naming the value, in the order below), then the link, buffer and
//! port tables and an event queue sized for the network's delays.

use super::*;
use crate::engine::adaptive::Channels;
use crate::engine::fabric::{ceil_ps, Links, PS_PER_S};
use crate::error::CoreError;

/// A refusal: one line naming the value and what was expected.
fn bad<T>(m: String) -> Result<T, CoreError> {
    Err(CoreError::InvalidArgument(format!("packet model: {m}")))
}

/// Table lengths, packet size, VC count and buffer depth; the full packet's
/// wire size.
fn check_sizes(links: &Links, link_dst: &[u32], cfg: &PacketConfig) -> Result<u64, CoreError> {
    let n = links.len();
    if links.latency.len() != n || link_dst.len() != n {
        return bad(format!(
            "{} bandwidths, {} latencies and {} link destinations, expected one of each per link",
            n,
            links.latency.len(),
            link_dst.len()
        ));
    }
    if cfg.packet_bytes == 0 {
        return bad("packet_bytes=0, expected at least 1 B of payload per packet".into());
    }
    let full_wire = cfg.packet_bytes.saturating_add(cfg.header_bytes);
    if full_wire > u32::MAX as u64 {
        return bad(format!(
            "packet_bytes + header_bytes = {} B, expected at most {} B",
            full_wire,
            u32::MAX
        ));
    }
    if cfg.vcs == 0 {
        return bad("vcs=0, expected at least 1 virtual channel per link".into());
    }
    if cfg.buffer_packets == 0 {
        return bad("buffer_packets=0, expected input buffers of at least 1 packet".into());
    }
    for (what, len) in [
        ("link_dim", cfg.link_dim.len()),
        ("dateline", cfg.dateline.len()),
    ] {
        if len != 0 && len != n {
            return bad(format!(
                "{what} has {len} entries, expected 0 or one per link ({n})"
            ));
        }
    }
    Ok(full_wire)
}

/// Datelines on torus links only, with a VC per class; whether there is any.
fn check_datelines(n: usize, cfg: &PacketConfig) -> Result<bool, CoreError> {
    let any_dateline = cfg.dateline.iter().any(|&d| d);
    if any_dateline {
        if let Some(l) =
            (0..n).find(|&l| cfg.dateline[l] && cfg.link_dim.get(l).is_none_or(|&d| d == NOT_TORUS))
        {
            return bad(format!(
                "link {l} is a dateline but not a torus link (link_dim {}), expected datelines on torus links only",
                cfg.link_dim.get(l).map_or("absent".to_string(), |d| d.to_string())
            ));
        }
        if cfg.vcs < 2 {
            return bad(format!(
                "vcs={} with a dateline, expected at least 2 (one per VC class), or dimension order with bubble flow control on one VC (routing dor-bubble)",
                cfg.vcs
            ));
        }
    }
    Ok(any_dateline)
}

/// Torus adaptive routing: over this network, alone, with an escape VC
/// and room for its bubble.
fn check_adaptive(n: usize, cfg: &PacketConfig, any_dateline: bool) -> Result<(), CoreError> {
    let Some(a) = &cfg.adaptive else {
        return Ok(());
    };
    if a.n_links() != n {
        return bad(format!(
            "adaptive routing over {} links, expected the network's {n}",
            a.n_links()
        ));
    }
    if any_dateline {
        return bad(
            "adaptive routing with datelines, expected one escape scheme (the bubble)".into(),
        );
    }
    let what = match a.channels {
        Channels::Adaptive if cfg.vcs < 2 => {
            return bad(format!(
                "vcs={} with adaptive routing, expected at least 2 (VC 0 the escape channel, the others dynamic; \
                 one VC is dimension order with bubble flow control, routing dor-bubble)",
                cfg.vcs
            ))
        }
        Channels::EscapeOnly if cfg.vcs != 1 => {
            return bad(format!(
                "vcs={} with dimension order on the bubble VC, expected 1 (BG/L's deterministic routing uses \
                 its bubble VC alone, all-to-all paper §2)",
                cfg.vcs
            ))
        }
        Channels::Adaptive => "adaptive routing",
        Channels::EscapeOnly => "dimension order on the bubble VC",
    };
    if a.has_rings() && cfg.buffer_packets < 2 {
        return bad(format!(
            "buffer_packets={} with {what} on a torus, expected at least 2 (the escape channel's bubble)",
            cfg.buffer_packets
        ));
    }
    Ok(())
}

/// Every link's bandwidth finite and positive.
fn check_bandwidths(links: &Links) -> Result<(), CoreError> {
    if let Some(l) =
        (0..links.len()).find(|&l| !(links.bandwidth[l].is_finite() && links.bandwidth[l] > 0.0))
    {
        return bad(format!(
            "link {l} has bandwidth {} B/s, expected finite and positive",
            links.bandwidth[l]
        ));
    }
    Ok(())
}

/// Dragonfly hop classes (one VC scheme, a VC per class) and UGAL over
/// them; whether VCs go by hop class.
fn check_hop_classes(n: usize, cfg: &PacketConfig, any_dateline: bool) -> Result<bool, CoreError> {
    let by_hop = !cfg.hop_kind.is_empty();
    if by_hop {
        if cfg.hop_kind.len() != n {
            return bad(format!(
                "hop_kind has {} entries, expected one per link ({n})",
                cfg.hop_kind.len()
            ));
        }
        if any_dateline || cfg.adaptive.is_some() {
            return bad(
                "hop classes with datelines or torus adaptive routing, expected one VC scheme"
                    .into(),
            );
        }
        if cfg.hop_classes == 0 || cfg.vcs < cfg.hop_classes {
            return bad(format!(
                "vcs={} for {} VC classes by hop, expected at least {} (one per class keeps a dragonfly deadlock free)",
                cfg.vcs, cfg.hop_classes, cfg.hop_classes.max(1)
            ));
        }
    }
    if let Some(u) = &cfg.ugal {
        if !by_hop || u.n_links() != n {
            return bad(format!(
                "UGAL over {} links with {} hop kinds, expected the network's {n} links and their hop kinds",
                u.n_links(),
                cfg.hop_kind.len()
            ));
        }
    }
    Ok(by_hop)
}

/// The endpoint model: an HCA serving at least one QP; Blue Gene/L's with
/// positive counts, a copy rate, a direction per link for its placement,
/// and none of the simple endpoint's options.
fn check_nic(n: usize, cfg: &PacketConfig) -> Result<(), CoreError> {
    let b = match &cfg.nic {
        Nic::Ib(hca) if hca.qps == 0 => {
            return bad("ib_qps=0, expected an HCA serving at least 1 queue pair".into())
        }
        Nic::Bgl(b) => b,
        _ => return Ok(()),
    };
    for (what, v) in [("fifos", b.fifos), ("fifo_packets", b.fifo_packets)] {
        if v == 0 {
            return bad(format!("bgl {what}=0, expected at least 1"));
        }
    }
    if !(b.cpu_links.is_finite() && b.cpu_links >= 0.0) {
        return bad(format!(
            "bgl cpu_links={}, expected a finite rate >= 0 links",
            b.cpu_links
        ));
    }
    if b.placement == Placement::Direction && b.link_dir.len() != n {
        return bad(format!(
            "bgl placement by direction with {} link directions, expected one per link ({n})",
            b.link_dir.len()
        ));
    }
    for (what, v) in [
        ("injection_fifos", cfg.injection_fifos as u64),
        ("injection_packets", cfg.injection_packets as u64),
        ("eject_handling", cfg.eject_handling),
    ] {
        if v != 0 {
            return bad(format!(
                "{what}={v} with the BG/L endpoint, expected 0 (its FIFOs and core set them)"
            ));
        }
    }
    Ok(())
}

/// Buffer ids: `(buffers, injection FIFOs)`, input buffers first; every
/// buffer and port id must fit in 32 bits below [`NONE`].
fn buffer_count(
    n: usize,
    vcs: usize,
    fifos: usize,
    n_endpoints: usize,
) -> Result<(usize, usize), CoreError> {
    let n_fifo = if fifos == 0 {
        Some(n)
    } else {
        n_endpoints.checked_mul(fifos)
    };
    let n_q = n_fifo
        .and_then(|f| n.checked_mul(vcs)?.checked_add(f))
        .filter(|&q| q < NONE as usize && q + n < NONE as usize)
        .ok_or_else(|| {
            CoreError::InvalidArgument(format!(
                "packet model: {n} links × {vcs} VCs and the injection FIFOs exceed 32-bit ids"
            ))
        })?;
    Ok((n_q, n_q - n * vcs))
}

/// `(VC classes, VCs per class)` of the VC scheme.
fn vc_classes(cfg: &PacketConfig, any_dateline: bool, by_hop: bool) -> (u8, u8) {
    if any_dateline {
        (2u8, cfg.vcs / 2)
    } else if by_hop {
        (cfg.hop_classes, cfg.vcs / cfg.hop_classes)
    } else {
        (1u8, cfg.vcs)
    }
}

/// Per link what a hop reads.
fn link_table(links: &Links, link_dst: &[u32], cfg: &PacketConfig, full_wire: u64) -> Vec<Link> {
    (0..links.len())
        .map(|l| {
            let ps_per_byte = PS_PER_S / links.bandwidth[l];
            Link {
                latency: links.latency[l],
                ser_full: ceil_ps(full_wire as f64 * ps_per_byte),
                busy_ps: 0,
                rr: NONE,
                dst: link_dst[l],
                from: NONE,
                busy: false,
                dirty: false,
                dim: cfg.link_dim.get(l).copied().unwrap_or(NOT_TORUS),
                dateline: cfg.dateline.get(l).copied().unwrap_or(false),
                req: Vec::new(),
            }
        })
        .collect()
}

/// Event queue buckets: a sixteenth of the shortest positive delay an
/// event is scheduled with (so few land in the current bucket and few need
/// sorting when it becomes current), the ring covering twice the longest
/// hop.
fn event_queue_for(links: &[Link], cfg: &PacketConfig) -> EventQueue<Event> {
    // BG/L: a core copies a full packet in ser / cpu_links (none: the
    // simple endpoint, or copies that take no time).
    let copy = match &cfg.nic {
        Nic::Bgl(b) if b.cpu_links > 0.0 => links
            .iter()
            .map(|l| (l.ser_full as f64 / b.cpu_links) as Ps)
            .min()
            .unwrap_or(0),
        _ => 0,
    };
    let grain = links
        .iter()
        .flat_map(|l: &Link| [l.ser_full, l.latency])
        .chain([cfg.router_delay, cfg.eject_handling, copy])
        .filter(|&d| d > 0)
        .min()
        .unwrap_or(1);
    let horizon = links
        .iter()
        .map(|l: &Link| l.ser_full + l.latency)
        .max()
        .unwrap_or(1)
        + cfg.router_delay
        + cfg.eject_handling;
    EventQueue::for_delays(grain, horizon)
}

/// The `n_q` buffers: `n · vcs` input buffers with every credit at their
/// sender, then the injection FIFOs.
fn buffer_table(cfg: &PacketConfig, n: usize, vcs: usize, n_q: usize) -> Vec<Buffer> {
    let buffer = |credits, port| Buffer {
        credits,
        occ: 0,
        max_occ: 0,
        head: NONE,
        tail: NONE,
        area: 0,
        port,
    };
    let inputs = (0..n * vcs).map(|q| buffer(cfg.buffer_packets, (q / vcs) as u32));
    let fifos = (n * vcs..n_q).map(|q| buffer(0, (q - n * vcs + n) as u32));
    inputs.chain(fifos).collect()
}

/// The flit routers of `cfg.flit`, refusing what they do not model.
fn flit_routers(
    links: &Links,
    link_dst: &[u32],
    n_endpoints: usize,
    cfg: &PacketConfig,
) -> Result<Option<Box<FlitNet>>, CoreError> {
    let Some(fc) = &cfg.flit else {
        return Ok(None);
    };
    let refuse = [
        (cfg.adaptive.is_some(), "torus adaptive routing"),
        (
            cfg.ugal.is_some() || !cfg.hop_kind.is_empty(),
            "dragonfly hop classes",
        ),
        (cfg.queues == Queues::VirtualOutput, "queues=voq"),
        (cfg.allocator == Allocator::Age, "allocator=age"),
        (cfg.eject_handling > 0, "eject_handling > 0"),
        (cfg.injection_fifos > 0, "injection_fifos > 0"),
        (matches!(cfg.nic, Nic::Ib(_)), "nic=ib"),
        (matches!(cfg.nic, Nic::Bgl(_)), "nic=bgl"),
    ];
    if let Some((_, what)) = refuse.iter().find(|(on, _)| *on) {
        return bad(format!(
            "flit_bytes={} with {what}, expected the flit routers without it (they model dimension order with datelines, round-robin iSLIP/separable allocators, input FIFOs)",
            fc.flit_bytes
        ));
    }
    Ok(Some(Box::new(FlitNet::new(
        fc.clone(),
        links,
        link_dst,
        n_endpoints,
        cfg.vcs,
        (cfg.packet_bytes, cfg.header_bytes),
        &cfg.link_dim,
        &cfg.dateline,
    )?)))
}

impl PacketFabric {
    /// A packet network over `links` (bandwidth B/s, latency ps), link `l`
    /// entering node `link_dst[l]` (nodes `0..n_endpoints` are endpoints).
    ///
    /// # Errors
    /// [`CoreError::InvalidArgument`] naming the value: a non-positive packet
    /// size, buffer depth or VC count, a length mismatch, a link bandwidth
    /// that is not finite and positive, a dateline on a non-torus link or
    /// with fewer than 2 VCs, or a network whose buffers need more than 2³²
    /// ids.
    pub fn new(
        links: Links,
        link_dst: Vec<u32>,
        n_endpoints: usize,
        cfg: PacketConfig,
    ) -> Result<Self, CoreError> {
        let n = links.len();
        let full_wire = check_sizes(&links, &link_dst, &cfg)?;
        let any_dateline = check_datelines(n, &cfg)?;
        check_adaptive(n, &cfg, any_dateline)?;
        check_bandwidths(&links)?;
        let by_hop = check_hop_classes(n, &cfg, any_dateline)?;
        check_nic(n, &cfg)?;
        let vcs = cfg.vcs as usize;
        let bgl = match &cfg.nic {
            Nic::Bgl(b) => Some(bgl::BglState::new(b.clone(), n_endpoints)),
            _ => None,
        };
        let fifos = match &cfg.nic {
            Nic::Bgl(b) => b.fifos as usize,
            _ => cfg.injection_fifos as usize,
        };
        let (n_q, n_fifo) = buffer_count(n, vcs, fifos, n_endpoints)?;
        let n_nodes = link_dst
            .iter()
            .map(|&d| d as usize + 1)
            .max()
            .unwrap_or(0)
            .max(n_endpoints);
        let (n_classes, per_class) = vc_classes(&cfg, any_dateline, by_hop);
        let flit = flit_routers(&links, &link_dst, n_endpoints, &cfg)?;
        let link_state = link_table(&links, &link_dst, &cfg, full_wire);
        let events = event_queue_for(&link_state, &cfg);
        Ok(PacketFabric {
            n_links: n,
            vcs,
            full_wire,
            torus: any_dateline,
            n_classes,
            per_class,
            by_hop,
            fifos,
            next_fifo: vec![0; if fifos > 0 { n_endpoints } else { 0 }],
            overflow: None,
            bgl,
            links: link_state,
            buffers: buffer_table(&cfg, n, vcs, n_q),
            stamp: 0,
            seen: if cfg.queues == Queues::VirtualOutput {
                vec![(0, NONE); n_q]
            } else {
                Vec::new()
            },
            port_busy: PortSet::new(n + n_fifo),
            port_wanted: PortSet::new(n + n_fifo),
            wanted: vec![Vec::new(); n + n_fifo],
            dirty: Vec::new(),
            dirty_work: Vec::new(),
            pend_head: vec![NONE; n_fifo],
            pend_tail: vec![NONE; n_fifo],
            qps: match &cfg.nic {
                Nic::Ib(hca) => (0..n_fifo).map(|f| Qps::new(hca.seed, f)).collect(),
                _ => Vec::new(),
            },
            packets: Vec::new(),
            free_packets: Vec::new(),
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            routes: Vec::new(),
            live_route: 0,
            eject_free: vec![0; n_nodes],
            scratch: Vec::new(),
            events,
            clock: 0,
            link_bytes: vec![0.0; n],
            ps_per_byte: links.bandwidth.iter().map(|&b| PS_PER_S / b).collect(),
            hops: 0,
            seq: 0,
            spread: 0,
            packets_alive: 0,
            msgs_alive: 0,
            flit,
            cfg,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn bad_configurations_are_refused_in_one_line() {
        let net = two_level([1e9; 4]);
        let make = |cfg: PacketConfig| {
            PacketFabric::new(
                Links {
                    bandwidth: net.bw.clone(),
                    latency: net.lat.clone(),
                },
                net.dst.clone(),
                2,
                cfg,
            )
            .map(|_| ())
            .unwrap_err()
            .to_string()
        };
        let e = make(PacketConfig {
            packet_bytes: 0,
            ..config()
        });
        assert!(e.contains("packet_bytes=0"), "{e}");
        let e = make(PacketConfig { vcs: 0, ..config() });
        assert!(e.contains("vcs=0"), "{e}");
        let e = make(PacketConfig {
            buffer_packets: 0,
            ..config()
        });
        assert!(e.contains("buffer_packets=0"), "{e}");
        let e = make(PacketConfig {
            link_dim: vec![0; 4],
            dateline: vec![true, false, false, false],
            ..config()
        });
        assert!(e.contains("vcs=1 with a dateline"), "{e}");
        let e = make(PacketConfig {
            vcs: 2,
            dateline: vec![true, false, false, false],
            ..config()
        });
        assert!(
            e.contains("link 0 is a dateline but not a torus link"),
            "{e}"
        );
        let e = make(PacketConfig {
            link_dim: vec![0; 3],
            ..config()
        });
        assert!(e.contains("link_dim has 3 entries"), "{e}");
        let mut bad = two_level([1e9; 4]);
        bad.bw[2] = 0.0;
        let e = PacketFabric::new(
            Links {
                bandwidth: bad.bw,
                latency: bad.lat,
            },
            bad.dst,
            2,
            config(),
        )
        .map(|_| ())
        .unwrap_err()
        .to_string();
        assert!(e.contains("link 2 has bandwidth 0 B/s"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn adaptive_routing_refuses_what_would_deadlock() {
        let (t, net, dims, date) = torus_net(&[4, 4]);
        let bad = |cfg: PacketConfig| {
            PacketFabric::new(
                Links {
                    bandwidth: net.bw.clone(),
                    latency: net.lat.clone(),
                },
                net.dst.clone(),
                net.n_endpoints,
                cfg,
            )
            .err()
            .expect("refused")
            .to_string()
        };
        assert!(bad(adaptive_cfg(&t, 1, 2)).contains("vcs=1 with adaptive routing"));
        assert!(bad(adaptive_cfg(&t, 1, 2)).contains("routing dor-bubble"));
        // The escape VC alone (BG/L's deterministic routing): one VC, depth 2.
        let bubble = |vcs, depth| {
            let mut cfg = adaptive_cfg(&t, vcs, depth);
            cfg.adaptive = cfg.adaptive.map(|a| {
                a.with(
                    crate::engine::adaptive::Channels::EscapeOnly,
                    crate::engine::adaptive::EscapeTie::Positive,
                )
            });
            cfg
        };
        assert!(
            bad(bubble(2, 2)).contains("vcs=2 with dimension order on the bubble VC, expected 1")
        );
        assert!(
            bad(bubble(1, 1)).contains("buffer_packets=1 with dimension order on the bubble VC")
        );
        assert!(bad(adaptive_cfg(&t, 2, 1)).contains("buffer_packets=1 with adaptive routing"));
        let both = PacketConfig {
            link_dim: dims,
            dateline: date,
            ..adaptive_cfg(&t, 2, 2)
        };
        assert!(bad(both).contains("adaptive routing with datelines"));
    }
}
