"""README.md's Python block runs as written, and python/README.md shows what the calls return."""

import re

import orrery


def test_readme_python_block_runs(root):
    text = (root / "README.md").read_text()
    section = text[text.index("\n## Python\n") :]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    env = {}
    exec(compile(block, "README.md", "exec"), env)
    r = env["r"]
    assert r.header["policy"] == "topology_aware" and r.header["horizon"] == "2 h"
    assert r.plot("timeline").data.startswith(b"\x89PNG")


def test_the_package_page_shows_real_figures(root):
    page = (root / "python/README.md").read_text()
    s = orrery.load("scenarios/quickstart.orr")
    assert f"<orrery.Scenario scenarios/quickstart.orr hash {s.hash}>" in page
    r = s.run(seed=1, policy="topology_aware", horizon="2 h")
    assert repr(r) in page
    for _, row in r.training.iterrows():
        assert re.search(rf"{row.job}\s+{row.steps_done}\s+{row.step_time_s:.6f}", page), row.job
    for _, row in r.tasks.iterrows():
        assert re.search(rf"{row.workload}\s+{row.group}\s+{row.completed}\s+{row.run_p99_s:.6f}", page)
    sw = orrery.sweep("scenarios/sweep_fabric.orr", seeds=5).summary
    for _, row in sw.iterrows():
        line = rf"{row['cluster.lab.fabric.oversubscription']}\s+{row['workload.train.training.llm.allreduce']}\s+{row.step_time_s_mean:.6f}\s+{row.cost_usd_mean:.6f}"
        assert re.search(line, page), line
    try:
        orrery.load("cluster lab {\n  rack r { node dgx_h10 x 2 }\n}\n")
    except orrery.OrreryError as e:
        err = next(d for d in e.diagnostics if d.severity == "error")
        assert f"{str(e).splitlines()[0][:40]}" in page
        assert f"line={err.line}, column={err.column}" in page and err.help in page
    else:
        raise AssertionError("the page's bad scenario loaded")


def test_the_package_page_quotes_the_import_warning(root):
    page = (root / "python/README.md").read_text()
    c = orrery.import_ray_cluster("scenarios/ray_clusters/kuberay_h100.yaml")
    assert f'"{c.warnings[0]}"' in page
