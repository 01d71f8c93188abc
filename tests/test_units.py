import pytest

from fabench.util.units import format_size, parse_size, parse_sizes


def test_parse_size_suffixes() -> None:
    assert parse_size("8") == 8
    assert parse_size("4K") == 4096
    assert parse_size("1MiB") == 1 << 20
    assert parse_size("2g") == 2 << 30


def test_parse_sizes_sweep_and_list() -> None:
    assert parse_sizes("1:16") == [1, 2, 4, 8, 16]
    assert parse_sizes("1:4M")[-1] == 4 << 20
    assert len(parse_sizes("1:4M")) == 23
    assert parse_sizes("8,1K") == [8, 1024]
    assert parse_sizes("0:2") == [0, 1, 2]


@pytest.mark.parametrize("bad", ["x", "4T", "", "1:"])
def test_parse_size_errors(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_sizes(bad) if ":" in bad else parse_size(bad)


def test_min_above_max_rejected() -> None:
    with pytest.raises(ValueError, match="minimum is larger"):
        parse_sizes("1M:1K")


def test_format_size() -> None:
    assert format_size(4 << 20) == "4M"
    assert format_size(1024) == "1K"
    assert format_size(1000) == "1000"
