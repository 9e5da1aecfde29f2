"""cached_json: what the cubin cache keeps beside the cubins (SASS listings, raw disassembly, regbank's patches)."""

from gpudissect.device import compiler


def test_an_entry_is_made_once_read_back_and_made_again_when_damaged_or_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(compiler, "cache_dir", lambda: tmp_path)
    made = []

    def make():
        made.append(1)
        return {"a": [1, 2]}

    assert compiler.cached_json("x.json", make, dict) == {"a": [1, 2]}
    assert compiler.cached_json("x.json", make, dict) == {"a": [1, 2]} and len(made) == 1  # read back
    (tmp_path / "x.json").write_text("{not json")
    assert compiler.cached_json("x.json", make, dict) == {"a": [1, 2]} and len(made) == 2  # damaged: made again

    def refuse(v):
        raise ValueError("not this one's")

    try:
        compiler.cached_json("x.json", make, refuse)
    except ValueError:
        pass  # the value made anew goes through `load` too
    assert len(made) == 3
    assert not list(tmp_path.glob("*.tmp"))  # written through a temporary file, replaced atomically
