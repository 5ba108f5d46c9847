//! The tuner returns a front of mutually non-dominated points, and its TOML reproduces the
//! recommended point.

use compaction_sim::tune::{Knobs, TuneOptions, pareto_front, tune};
use compaction_sim::{Options, Variant};
use hermes_compaction::{Config, ConfigLoader};

use crate::common::{example, extractive, run, tool_session};

#[test]
fn the_front_is_mutually_non_dominated_and_the_toml_reproduces_the_point() {
    let inputs = vec![
        example(),
        ("tools.jsonl".to_owned(), tool_session(20, 6_000)),
    ];
    let mut base = Config::default();
    base.model.context_length = 24_000;
    let options = TuneOptions {
        budget: 12,
        seed: 7,
        ..TuneOptions::default()
    };
    let progress = std::sync::Mutex::new(Vec::new());
    let tuning = tune(&inputs, &base, &options, extractive(), &|done, total| {
        progress.lock().unwrap().push((done, total));
    })
    .unwrap();
    assert_eq!(tuning.evaluated, 12);
    assert_eq!(progress.into_inner().unwrap().last(), Some(&(12, 12)));
    assert!(!tuning.front.is_empty());
    for a in &tuning.front {
        assert_eq!(a.overflows, 0);
        for b in &tuning.front {
            assert!(!a.dominates(b), "{} dominates {}", a.name, b.name);
        }
    }
    // Every feasible point off the front is dominated by a front point.
    for p in &tuning.points {
        let on = tuning.front.iter().any(|f| f.knobs == p.knobs);
        let dominated = tuning.front.iter().any(|f| f.dominates(p));
        let tied = tuning.front.iter().any(|f| {
            f.cost == p.cost && f.far_recall == p.far_recall && f.summary_calls == p.summary_calls
        });
        assert!(on || dominated || tied, "{}", p.name);
        // Every candidate is one the configuration loader accepts.
        assert!(p.knobs.apply(&base).validate().is_ok(), "{}", p.name);
    }
    assert!(tuning.meets_limits);
    assert!(tuning.recommended.far_recall >= tuning.baseline.far_recall);
    assert!(tuning.recommended.cost <= tuning.baseline.cost);

    // The TOML loads through the configuration loader and replays to the same figures.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tuned.toml");
    std::fs::write(&path, tuning.toml(&base, &options.pricing)).unwrap();
    let loaded = ConfigLoader::new().file(&path).env().load().unwrap().0;
    assert_eq!(loaded.model.context_length, 24_000);
    assert_eq!(Knobs::of(&loaded), tuning.recommended.knobs);
    let sim = run(
        &inputs,
        &[Variant {
            name: "tuned".into(),
            config: loaded,
            foresight: 0,
        }],
        &Options::default(),
    );
    let t = &sim.totals[0];
    assert_eq!(t.unit_cost, tuning.recommended.unit_cost);
    assert_eq!(t.summary_calls, tuning.recommended.summary_calls);
    assert_eq!(
        t.derived().mean_retention,
        tuning.recommended.mean_retention
    );
    assert_eq!(t.derived().far_recall, tuning.recommended.far_recall);

    let svg = tuning.svg();
    assert!(svg.starts_with("<svg"));
    assert_eq!(
        svg.matches("class=\"front-point\"").count(),
        tuning.front.len()
    );
    check_axes(&svg);
    // Costs are printed with their unit and two decimals.
    assert_eq!(tuning.cost_unit, compaction_sim::tune::CostUnit::IssueUnits);
    let table = tuning.table();
    assert!(
        table.contains(&tuning.cost_unit.format(tuning.recommended.cost)),
        "{table}"
    );
    assert!(table.contains("M units"), "{table}");
}

/// The plot reads as a plot: at least three distinct, increasing x tick labels, and every
/// point inside the plotted area (the range the ticks and axes span).
fn check_axes(svg: &str) {
    let attr = |tag: &str, name: &str| -> f64 {
        let key = format!(" {name}=\"");
        let at = tag.find(&key).unwrap_or_else(|| panic!("{name} in {tag}")) + key.len();
        tag[at..].split('"').next().unwrap().parse().unwrap()
    };
    let labels: Vec<String> = svg
        .split("<g class=\"xtick\">")
        .skip(1)
        .map(|g| {
            let text = &g[g.find("<text").unwrap()..];
            text[text.find('>').unwrap() + 1..text.find("</text>").unwrap()].to_owned()
        })
        .collect();
    assert!(labels.len() >= 3, "{labels:?}");
    let values: Vec<f64> = labels.iter().map(|l| l.parse().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{labels:?}");
    let tick_x: Vec<f64> = svg
        .split("<g class=\"xtick\"><line")
        .skip(1)
        .map(|g| attr(g, "x1"))
        .collect();
    let (left, right) = (tick_x[0], tick_x[tick_x.len() - 1]);
    let axis = &svg[svg.find("<g class=\"axes\"").unwrap()..];
    let (x_axis_left, x_axis_right) = (attr(axis, "x1"), attr(axis, "x2"));
    let (bottom, top) = {
        let second = &axis[axis.find("/><line").unwrap() + 2..];
        (attr(second, "y2"), attr(second, "y1"))
    };
    assert!(
        x_axis_left <= left && right <= x_axis_right,
        "ticks inside the axis"
    );
    for c in svg.split("<circle").skip(1) {
        let (cx, cy) = (attr(c, "cx"), attr(c, "cy"));
        assert!(
            (x_axis_left..=x_axis_right).contains(&cx),
            "point at x {cx}"
        );
        assert!((top..=bottom).contains(&cy), "point at y {cy}");
    }
}

#[test]
fn pareto_front_drops_dominated_points() {
    use compaction_sim::tune::Point;
    let base = Knobs::of(&Config::default());
    let p = |cost: f64, retention: f64, calls: u64| Point {
        name: format!("{cost}-{retention}-{calls}"),
        knobs: base,
        cost,
        unit_cost: cost,
        cost_usd: 0.0,
        far_recall: retention,
        far_recall_verbatim: retention,
        content_recall: retention,
        effective_cost: cost,
        reread_rounds: 0,
        reread_tokens: 0,
        mean_retention: 1.0,
        min_retention: retention,
        summary_calls: calls,
        summary_unit_cost: 0.0,
        overflows: 0,
        total: Default::default(),
    };
    let points = vec![
        p(10.0, 0.9, 5),
        p(12.0, 0.8, 5), // dominated by the first
        p(8.0, 0.7, 5),
        p(11.0, 0.9, 2),
        p(10.0, 0.9, 5), // a duplicate
    ];
    let front = pareto_front(&points);
    let costs: Vec<f64> = front.iter().map(|p| p.cost).collect();
    assert_eq!(costs, vec![8.0, 10.0, 11.0]);
}

#[test]
fn the_recommendation_meets_the_recall_and_call_limits_asked_for() {
    let inputs = vec![
        example(),
        ("tools.jsonl".to_owned(), tool_session(20, 6_000)),
    ];
    let mut base = Config::default();
    base.model.context_length = 24_000;
    let free = TuneOptions {
        budget: 16,
        seed: 3,
        min_recall: Some(0.0),
        ..TuneOptions::default()
    };
    let tuning = tune(&inputs, &base, &free, extractive(), &|_, _| {}).unwrap();
    // Without a recall limit the recommendation is the cheapest point of the front.
    let cheapest = &tuning.front[0];
    assert_eq!(tuning.recommended.knobs, cheapest.knobs);
    // Ask for more recall than the cheapest point keeps, within the front's range: the
    // recommendation is the cheapest point that keeps it.
    let best = tuning
        .front
        .iter()
        .map(|p| p.far_recall)
        .fold(0.0_f64, f64::max);
    let want = (cheapest.far_recall + best) / 2.0;
    let strict = TuneOptions {
        min_recall: Some(want),
        ..free.clone()
    };
    let again = tune(&inputs, &base, &strict, extractive(), &|_, _| {}).unwrap();
    assert!(again.meets_limits);
    assert!(
        again.recommended.far_recall >= want,
        "{}",
        again.recommended.far_recall
    );
    for p in again.front.iter().filter(|p| p.far_recall >= want) {
        assert!(p.cost >= again.recommended.cost, "{} is cheaper", p.name);
    }
    // The summary-call limit binds the same way.
    let calls = again.front.iter().map(|p| p.summary_calls).min().unwrap();
    let capped = TuneOptions {
        min_recall: Some(0.0),
        max_summary_calls: Some(calls),
        ..free.clone()
    };
    let capped = tune(&inputs, &base, &capped, extractive(), &|_, _| {}).unwrap();
    assert!(capped.recommended.summary_calls <= calls);
    // An impossible limit keeps the starting configuration and says so.
    let impossible = TuneOptions {
        min_recall: Some(1.01),
        ..free
    };
    let none = tune(&inputs, &base, &impossible, extractive(), &|_, _| {}).unwrap();
    assert!(!none.meets_limits);
    assert_eq!(none.recommended.knobs, none.baseline.knobs);
    assert!(
        none.table()
            .contains("no point on the front meets the limits")
    );
}

/// A front at 81-97% far recall is plotted over its own range (not 0-100%), the start
/// (a ring) and a recommendation beside it both show, the legend gives each one's figures
/// with their unit, and the TOML says what its cost counts.
#[test]
fn the_plot_scales_to_its_points_and_labels_its_units() {
    use compaction_sim::pricing::Pricing;
    use compaction_sim::tune::{CostUnit, Point, Tuning};
    let base = Config::default();
    let mut other = base.clone();
    other.compression.threshold = 0.6;
    let p = |name: &str, knobs: Knobs, cost: f64, recall: f64| Point {
        name: name.into(),
        knobs,
        cost,
        unit_cost: cost * 1e4,
        cost_usd: cost,
        far_recall: recall,
        far_recall_verbatim: recall,
        content_recall: recall,
        effective_cost: cost,
        reread_rounds: 0,
        reread_tokens: 0,
        mean_retention: 0.9,
        min_retention: 0.8,
        summary_calls: 3,
        summary_unit_cost: 0.0,
        overflows: 0,
        total: Default::default(),
    };
    let start = p("start", Knobs::of(&base), 10.0, 0.85);
    let recommended = p("rec", Knobs::of(&other), 9.95, 0.852);
    let mut points = vec![start.clone(), recommended.clone()];
    for (i, (cost, recall)) in [(8.0, 0.81), (12.0, 0.97), (9.0, 0.83)].iter().enumerate() {
        let mut c = base.clone();
        c.compression.protect_last_n = 5 + i;
        points.push(p(&format!("p{i}"), Knobs::of(&c), *cost, *recall));
    }
    let tuning = Tuning {
        baseline: start,
        front: points[2..].to_vec(),
        points,
        recommended,
        meets_limits: true,
        min_recall: 0.8,
        evaluated: 5,
        cost_unit: CostUnit::Dollars,
        warm_searched: false,
        price_ratio: 1.0,
    };
    let svg = tuning.svg();
    check_axes(&svg);
    let ticks: Vec<f64> = svg
        .split("<g class=\"ytick\">")
        .skip(1)
        .map(|g| {
            let text = &g[g.find("<text").unwrap()..];
            let label = &text[text.find('>').unwrap() + 1..text.find("</text>").unwrap()];
            label.trim_end_matches('%').parse().unwrap()
        })
        .collect();
    let (lo, hi) = (ticks[0], ticks[ticks.len() - 1]);
    assert!(
        lo >= 70.0 && hi <= 100.0 && lo < 81.0 && hi >= 97.0,
        "{ticks:?}"
    );
    // The start is a hollow ring, the recommendation a dot: both drawn.
    assert!(svg.contains(r#"class="baseline" cx="#) && svg.contains(r#"fill="none""#));
    assert_eq!(svg.matches(r#"<circle class="recommended""#).count(), 1);
    for label in [
        "starting configuration",
        "$10.00, 85.0%",
        "recommended",
        "$9.95, 85.2%",
    ] {
        assert!(svg.contains(label), "legend without {label:?}");
    }
    let toml = tuning.toml(&base, &Pricing::Table(Default::default()));
    let header = toml.lines().next().unwrap();
    assert!(header.contains("cost $9.95 (dollars"), "{header}");
}

/// Issue 34 item 1: the tuner chooses the summary request's form by cost, warm (the agent's
/// own model, its cached prefix at the hit price) or standalone (a model at
/// `auxiliary.compression.price_ratio` of the agent model's prices): the same model picks
/// warm, a very cheap one standalone, and the switch sits where the two forms' priced figures
/// cross.
#[test]
fn the_tuner_picks_the_summary_request_form_the_prices_favour() {
    let inputs = vec![example()];
    let mut base = Config::default();
    base.model.context_length = 32_000;
    let with_ratio = |ratio: f64| {
        let mut c = base.clone();
        c.auxiliary.compression.price_ratio = ratio;
        c
    };
    // The two forms at the starting settings, the standalone one at the agent model's price.
    let replay = |warm: bool| replay_form(&inputs, &base, warm, &Options::default());
    let (warm, standalone) = (replay(true), replay(false));
    assert!(standalone.summary_calls > 0, "the session compacts");
    assert_eq!(warm.summary_calls, standalone.summary_calls);
    assert!(warm.summary_prompt_hit_tokens > 0 && standalone.summary_prompt_hit_tokens == 0);
    // Everything but the summary calls is alike; the summary calls of a standalone model
    // scale with its price ratio, so the forms cost the same at this ratio.
    let rest = standalone.unit_cost - standalone.summary_unit_cost;
    assert!((warm.unit_cost - warm.summary_unit_cost - rest).abs() < 1e-6);
    let crossover = (warm.unit_cost - rest) / standalone.summary_unit_cost;
    assert!(
        crossover > 0.05 && crossover < 1.0,
        "the warm request is cheaper than a standalone one at the same price, dearer than \
         one at a twentieth: crossover {crossover}"
    );
    let options = TuneOptions {
        budget: 2,
        ..TuneOptions::default()
    };
    for (ratio, want_warm) in [
        (1.0, true),
        (0.05, false),
        (crossover * 1.05, true),
        (crossover * 0.95, false),
    ] {
        let config = with_ratio(ratio);
        let tuning = tune(&inputs, &config, &options, extractive(), &|_, _| {}).unwrap();
        // The start and the start with the other form.
        assert_eq!(tuning.evaluated, 2);
        assert_eq!(tuning.points.len(), 2);
        let (w, s) = (form(&tuning, true), form(&tuning, false));
        assert!((w.unit_cost - warm.unit_cost).abs() < 1e-6, "{ratio}");
        assert!(
            (s.summary_unit_cost - ratio * standalone.summary_unit_cost).abs() < 1e-6,
            "{ratio}: the standalone summary calls at the ratio"
        );
        assert_eq!(
            tuning.recommended.knobs.warm_cache, want_warm,
            "ratio {ratio} (crossover {crossover}): warm {} against standalone {}",
            w.cost, s.cost
        );
        assert_eq!(w.cost < s.cost, want_warm);
        // The tuned TOML says which form, and the price it was chosen at, and loads as the
        // recommended point.
        let toml = tuning.toml(&config, &options.pricing);
        let line = if want_warm {
            "warm_cache = \"on\""
        } else {
            "warm_cache = \"off\""
        };
        assert!(toml.contains(line), "{toml}");
        assert!(toml.contains("price per token"), "{toml}");
        let loaded = ConfigLoader::new().toml(&toml).load().unwrap().0;
        assert_eq!(Knobs::of(&loaded), tuning.recommended.knobs);
        assert_eq!(loaded.auxiliary.compression.price_ratio, ratio);
    }
    // Left out of the search, the form stays the start's.
    let fixed = TuneOptions {
        warm: false,
        ..options
    };
    let tuning = tune(&inputs, &with_ratio(0.05), &fixed, extractive(), &|_, _| {}).unwrap();
    assert!(tuning.points.iter().all(|p| !p.knobs.warm_cache));
    assert!(!tuning.toml(&base, &fixed.pricing).contains("warm_cache"));
}

/// Under a profile without prices (`local`) the objective is input-token equivalents, and the
/// standalone form's summary calls count at `price_ratio` of the agent model's tokens too
/// ([`compaction_sim::Row::summary_token_equivalents`]): the pick switches where the two
/// forms' token figures cross, as it does under prices.
#[test]
fn without_prices_the_tuner_still_weighs_the_standalone_models_price_ratio() {
    use compaction_sim::Pricing;
    use hermes_compaction::cache::CacheProfile;
    let inputs = vec![example()];
    let mut base = Config::default();
    base.model.context_length = 32_000;
    let local = Pricing::Profile(CacheProfile::named("local").unwrap());
    let options = Options {
        pricings: vec![local.clone()],
        ..Options::default()
    };
    let replay = |warm: bool| replay_form(&inputs, &base, warm, &options);
    let (warm, standalone) = (replay(true), replay(false));
    assert!(standalone.summary_calls > 0, "the session compacts");
    assert_eq!(warm.cost_usd, 0.0, "no prices");
    assert!(
        (warm.prompt_token_equivalents - standalone.prompt_token_equivalents).abs() < 1e-6,
        "the agent's prompts are alike"
    );
    assert!(standalone.summary_token_equivalents > 0.0);
    // The standalone calls at the agent model's price, with no cache discount under `local`:
    // every token counts once.
    assert_eq!(
        standalone.summary_token_equivalents,
        (standalone.summary_prompt_tokens + standalone.summary_output_tokens) as f64
    );
    let crossover = warm.summary_token_equivalents / standalone.summary_token_equivalents;
    let options = TuneOptions {
        budget: 2,
        pricing: local.clone(),
        ..TuneOptions::default()
    };
    for (ratio, want_warm) in [
        (0.01, false),
        (crossover * 1.05, true),
        (crossover * 0.95, false),
    ] {
        let mut config = base.clone();
        config.auxiliary.compression.price_ratio = ratio;
        let tuning = tune(&inputs, &config, &options, extractive(), &|_, _| {}).unwrap();
        assert_eq!(tuning.evaluated, 2);
        let (w, s) = (form(&tuning, true), form(&tuning, false));
        assert!(
            (s.cost
                - (standalone.prompt_token_equivalents
                    + ratio * standalone.summary_token_equivalents))
                .abs()
                < 1e-3,
            "{ratio}: the standalone point's objective counts its summary calls at the ratio"
        );
        assert_eq!(
            tuning.recommended.knobs.warm_cache, want_warm,
            "ratio {ratio} (crossover {crossover}): warm {} against standalone {}",
            w.cost, s.cost
        );
    }
}

/// The totals of `inputs` replayed at `base` with the summary request warm or standalone
/// (`Knobs::warm_cache`), everything else at `base`.
fn replay_form(
    inputs: &[(String, Vec<hermes_compaction::core::Message>)],
    base: &Config,
    warm: bool,
    options: &Options,
) -> compaction_sim::Row {
    let knobs = Knobs {
        warm_cache: warm,
        ..Knobs::of(base)
    };
    let variant = Variant {
        name: knobs.name(),
        config: knobs.apply(base),
        foresight: 0,
    };
    run(inputs, &[variant], options).totals[0].clone()
}

/// The point of a tuning whose summary request is warm (`true`) or standalone.
fn form(tuning: &compaction_sim::tune::Tuning, warm: bool) -> &compaction_sim::tune::Point {
    tuning
        .points
        .iter()
        .find(|p| p.knobs.warm_cache == warm)
        .unwrap()
}
