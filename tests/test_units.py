import pytest

from components.units import GB, ByteSize, GiB, MiB


@pytest.mark.parametrize(
    ("text", "expected"),
    [("300GiB", 300 * GiB), ("300Gi", 300 * GiB), ("200GB", 200 * GB), ("1.5GiB", 3 * GiB // 2), (1024, 1024)],
)
def test_parse(text: str | int, expected: int) -> None:
    assert ByteSize.parse(text).bytes == expected


@pytest.mark.parametrize("text", ["banana", "12XB", "-1GiB", "0.3B", True])
def test_parse_rejects(text: object) -> None:
    with pytest.raises(ValueError, match=r"size|whole"):
        ByteSize.parse(text)  # type: ignore[arg-type]


def test_quantity_uses_the_largest_exact_binary_unit() -> None:
    assert ByteSize(300 * GiB).quantity() == "300Gi"
    assert ByteSize(1536 * 1024**2).quantity() == "1536Mi"
    assert ByteSize(200 * GB).quantity() == "200G"
    assert ByteSize(4096 + 1024).quantity() == "5Ki"
    assert ByteSize(1001).quantity() == "1001"


def test_floor_to() -> None:
    assert ByteSize(2 * GiB - 1).floor_to(GiB) == ByteSize(GiB)


def test_ceil_to() -> None:
    assert ByteSize(GiB + 1).ceil_to(GiB) == ByteSize(2 * GiB)
    assert ByteSize(2 * GiB).ceil_to(GiB) == ByteSize(2 * GiB)


def test_readable_form_is_gib_or_tib_for_a_planner() -> None:
    assert ByteSize(6_159_872 * MiB).readable() == "5.87 TiB"  # human() writes "6159872 MiB"
    assert ByteSize(300 * GiB).readable() == "300 GiB"
    assert ByteSize(1536 * MiB).readable() == "1.5 GiB"
    assert ByteSize(512 * MiB).readable() == "512 MiB"


def test_human_form_round_trips_through_parse() -> None:
    for size in (ByteSize(300 * GiB), ByteSize(400 * GB), ByteSize(112 * 1024), ByteSize(7)):
        assert ByteSize.parse(size.human().replace(" ", "")) == size
    assert ByteSize(400 * GB).human() == "400 GB"
