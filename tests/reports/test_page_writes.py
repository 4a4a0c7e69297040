"""A page build names each file it wrote, and says "unchanged" where the bytes are those the file had."""

from __future__ import annotations

from softmax_zoo.reports import __main__ as cli


def test_a_page_build_prints_each_file_it_wrote(tmp_path, monkeypatch, capsys):
    text = {"page.md": "# page\n"}

    def build(results_dir="results", out=None):
        for name, body in text.items():
            (tmp_path / name).write_text(body)

    monkeypatch.setattr(cli, "builder", lambda page: build)
    cli.build_page("fig2", results_dir=str(tmp_path))
    assert capsys.readouterr().out.splitlines() == [f"wrote {tmp_path / 'page.md'}"]
    cli.build_page("fig2", results_dir=str(tmp_path))
    assert capsys.readouterr().out.splitlines() == [f"{tmp_path / 'page.md'} unchanged"]
    text.update({"page.md": "# page, changed\n", "claims.md": "rows\n"})
    cli.build_page("fig2", results_dir=str(tmp_path))
    assert sorted(capsys.readouterr().out.splitlines()) == [f"wrote {tmp_path / 'claims.md'}", f"wrote {tmp_path / 'page.md'}"]


def test_the_sweep_command_prints_the_files_it_wrote(tmp_path, capsys):
    folder = tmp_path / "runs" / "sweep"
    folder.mkdir(parents=True)
    for k in (5, 20):
        (folder / f"k{k}.json").write_text(
            f'{{"run_name": "k{k}", "metrics": {{"test/loss": {k}}}, "job": {{"overrides": ["loss.k={k}"]}}}}')
    assert cli.main(["sweep", str(folder), f"out={tmp_path / 'out'}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    name = str(folder).strip("/").replace("/", "_")
    assert lines[-2:] == [f"wrote {tmp_path / 'out' / f'sweep_{name}.md'}", f"wrote {tmp_path / 'out' / f'sweep_{name}.png'}"]
