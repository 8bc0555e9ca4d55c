"""The unit converter and the time-zone tool of the demo toolset."""

from __future__ import annotations

import asyncio
import datetime as dt
import math

import pytest

from tether.cli.demo.tools import convert_units, current_time
from tether.cli.demo.units import UnitError, convert
from tether.messages import ToolUseBlock


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        (1, "km", "m", 1000),
        (1, "mile", "km", 1.609344),
        (12, "inches", "ft", 1),
        (1, "kg", "lb", 2.20462262185),
        (16, "oz", "pound", 1),
        (1, "gal", "l", 3.785411784),
        (1000, "ml", "L", 1),
        (100, "km/h", "m/s", 27.7777777778),
        (60, "mph", "km/h", 96.56064),
        (1, "knot", "km/h", 1.852),
        (100, "C", "F", 212),
        (32, "fahrenheit", "celsius", 0),
        (0, "K", "°C", -273.15),
        (-40, "c", "f", -40),
    ],
)
def test_conversions(value: float, source: str, target: str, expected: float) -> None:
    result, _, _ = convert(value, source, target)
    assert result == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_incompatible_units_are_a_clear_error() -> None:
    with pytest.raises(UnitError, match=r"cannot convert length \(km\) to mass \(kg\)"):
        convert(3, "km", "kg")


def test_unknown_unit_lists_the_known_ones() -> None:
    with pytest.raises(UnitError, match=r"unknown unit 'parsec'.*length: m, km"):
        convert(1, "parsec", "m")


def test_below_absolute_zero() -> None:
    with pytest.raises(UnitError, match="below absolute zero"):
        convert(-300, "C", "K")


@pytest.mark.parametrize(
    ("value", "source", "target"),
    [
        (1e308, "km", "mm"),
        (1e308, "km", "m"),
        (-1e308, "mi", "nm"),
        (1.7e308, "C", "F"),
        (1e300, "t", "mg"),
    ],
)
def test_results_too_large_to_represent_are_an_error(
    value: float, source: str, target: str
) -> None:
    with pytest.raises(UnitError, match="too large to represent"):
        convert(value, source, target)


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [(1e308, "km", "km", 1e308), (1e308, "mm", "km", 1e302), (1e308, "F", "C", 5.5555e307)],
)
def test_huge_values_that_fit_are_converted(
    value: float, source: str, target: str, expected: float
) -> None:
    """No step on the way may overflow when the result itself fits."""
    result, _, _ = convert(value, source, target)
    assert result == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_values_are_an_error(value: float) -> None:
    with pytest.raises(UnitError, match="finite number"):
        convert(value, "km", "m")


async def _call(tool_name: str, **arguments: object) -> tuple[bool, str]:
    tools = {"current_time": current_time, "convert_units": convert_units}
    from tether import Agent
    from tether.testing import ScriptedTransport

    agent = Agent(system="", transport=ScriptedTransport([]), tools=[tools[tool_name]])
    [result] = await agent.dispatch_tools([ToolUseBlock("c1", tool_name, arguments)], 1)
    assert isinstance(result.content, str)
    return result.is_error, result.content


def test_convert_units_tool_text() -> None:
    is_error, text = asyncio.run(_call("convert_units", value=10, from_unit="km", to_unit="mi"))
    assert not is_error
    assert text == "10 km = 6.213711922 mi"


def test_convert_units_tool_error_reaches_the_model() -> None:
    is_error, text = asyncio.run(_call("convert_units", value=1, from_unit="km", to_unit="kg"))
    assert is_error
    assert "cannot convert length (km) to mass (kg)" in text


def test_convert_units_tool_overflow_reaches_the_model_as_an_error() -> None:
    is_error, text = asyncio.run(_call("convert_units", value=1e308, from_unit="km", to_unit="mm"))
    assert is_error
    assert "too large to represent" in text


@pytest.mark.parametrize(
    ("zone", "key"),
    [
        ("Asia/Tokyo", "Asia/Tokyo"),
        ("Europe/Paris", "Europe/Paris"),
        ("UTC", "UTC"),
        ("Tokyo", "Asia/Tokyo"),
        ("paris", "Europe/Paris"),
        ("New York", "America/New_York"),
        ("new_york", "America/New_York"),
    ],
)
def test_current_time_zones(zone: str, key: str) -> None:
    text = current_time.handler(zone)
    assert text.endswith(f"in {key}")
    now = dt.datetime.now(dt.UTC)
    assert str(now.year) in text or str(now.year + 1) in text or str(now.year - 1) in text


def test_current_time_has_the_right_offset() -> None:
    text = current_time.handler("Asia/Kolkata")
    assert "(UTC+05:30)" in text


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "../../etc/passwd", "/etc/localtime"])
def test_unknown_zone_is_a_clear_error(zone: str) -> None:
    with pytest.raises(ValueError, match=r"unknown time zone.*IANA name"):
        current_time.handler(zone)


def test_tools_have_descriptions_and_schemas() -> None:
    assert "time zone" in current_time.description
    assert current_time.schema is not None and convert_units.schema is not None
    assert current_time.schema["required"] == ["timezone"]
    props = convert_units.schema["properties"]
    assert props["value"]["type"] == "number"
    assert props["from_unit"]["description"]
