"""Unit conversion for the demo tools: length, mass, volume, speed (linear) and temperature."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["UnitError", "convert", "known_units"]


class UnitError(ValueError):
    """An unknown unit, units of different kinds, or a value that makes no sense."""


@dataclass(frozen=True, slots=True)
class _Unit:
    symbol: str
    kind: str
    factor: float  # size in the kind's base unit (m, kg, L, m/s); unused for temperature


def _table() -> dict[str, _Unit]:
    rows: list[tuple[str, str, float, tuple[str, ...]]] = [
        # length, base metre
        ("m", "length", 1.0, ("meter", "meters", "metre", "metres")),
        ("km", "length", 1000.0, ("kilometer", "kilometers", "kilometre", "kilometres")),
        ("cm", "length", 0.01, ("centimeter", "centimeters", "centimetre", "centimetres")),
        ("mm", "length", 0.001, ("millimeter", "millimeters", "millimetre", "millimetres")),
        ("um", "length", 1e-6, ("µm", "micrometer", "micrometers", "micron", "microns")),
        ("nm", "length", 1e-9, ("nanometer", "nanometers", "nanometre", "nanometres")),
        ("in", "length", 0.0254, ("inch", "inches", '"')),
        ("ft", "length", 0.3048, ("foot", "feet", "'")),
        ("yd", "length", 0.9144, ("yard", "yards")),
        ("mi", "length", 1609.344, ("mile", "miles")),
        ("nmi", "length", 1852.0, ("nautical mile", "nautical miles")),
        # mass, base kilogram
        ("kg", "mass", 1.0, ("kilogram", "kilograms", "kilo", "kilos")),
        ("g", "mass", 0.001, ("gram", "grams")),
        ("mg", "mass", 1e-6, ("milligram", "milligrams")),
        ("t", "mass", 1000.0, ("tonne", "tonnes", "metric ton", "metric tons")),
        ("lb", "mass", 0.45359237, ("lbs", "pound", "pounds")),
        ("oz", "mass", 0.028349523125, ("ounce", "ounces")),
        ("st", "mass", 6.35029318, ("stone", "stones")),
        # volume, base litre
        ("l", "volume", 1.0, ("liter", "liters", "litre", "litres")),
        ("ml", "volume", 0.001, ("milliliter", "milliliters", "millilitre", "millilitres")),
        ("cl", "volume", 0.01, ("centiliter", "centiliters", "centilitre", "centilitres")),
        ("m3", "volume", 1000.0, ("m^3", "m³", "cubic meter", "cubic meters", "cubic metre")),
        ("cm3", "volume", 0.001, ("cm^3", "cm³", "cc", "cubic centimeter", "cubic centimeters")),
        ("gal", "volume", 3.785411784, ("gallon", "gallons", "us gallon", "us gallons")),
        ("imp gal", "volume", 4.54609, ("imperial gallon", "imperial gallons")),
        ("qt", "volume", 0.946352946, ("quart", "quarts")),
        ("pt", "volume", 0.473176473, ("pint", "pints")),
        ("cup", "volume", 0.2365882365, ("cups",)),
        ("fl oz", "volume", 0.0295735295625, ("floz", "fluid ounce", "fluid ounces")),
        ("tbsp", "volume", 0.01478676478125, ("tablespoon", "tablespoons")),
        ("tsp", "volume", 0.00492892159375, ("teaspoon", "teaspoons")),
        # speed, base metre per second
        ("m/s", "speed", 1.0, ("mps", "meters per second", "metres per second")),
        ("km/h", "speed", 1 / 3.6, ("kph", "kmh", "km/hr", "kilometers per hour")),
        ("mph", "speed", 0.44704, ("mi/h", "miles per hour")),
        ("kn", "speed", 1852 / 3600, ("knot", "knots", "kt")),
        ("ft/s", "speed", 0.3048, ("fps", "feet per second")),
        # temperature (converted by formula)
        ("°C", "temperature", 1.0, ("c", "celsius", "degc", "deg c", "degrees celsius")),
        ("°F", "temperature", 1.0, ("f", "fahrenheit", "degf", "deg f", "degrees fahrenheit")),
        ("K", "temperature", 1.0, ("k", "kelvin", "kelvins")),
    ]
    table: dict[str, _Unit] = {}
    for symbol, kind, factor, aliases in rows:
        unit = _Unit(symbol, kind, factor)
        for name in (symbol, *aliases):
            table[_key(name)] = unit
    return table


def _key(name: str) -> str:
    return " ".join(name.strip().lower().replace("_", " ").split())


_UNITS = _table()


def known_units() -> dict[str, list[str]]:
    """The unit symbols of each kind."""
    out: dict[str, list[str]] = {}
    for unit in _UNITS.values():
        symbols = out.setdefault(unit.kind, [])
        if unit.symbol not in symbols:
            symbols.append(unit.symbol)
    return out


def _lookup(name: str) -> _Unit:
    unit = _UNITS.get(_key(name))
    if unit is None:
        listing = "; ".join(f"{kind}: {', '.join(s)}" for kind, s in known_units().items())
        raise UnitError(f"unknown unit {name!r}. Known units: {listing}")
    return unit


# The formulas scale by 1.8 in one step, so no intermediate product overflows before the result.
def _to_kelvin(value: float, symbol: str) -> float:
    if symbol == "°C":
        return value + 273.15
    if symbol == "°F":
        return (value - 32) / 1.8 + 273.15
    return value


def _from_kelvin(value: float, symbol: str) -> float:
    if symbol == "°C":
        return value - 273.15
    if symbol == "°F":
        return (value - 273.15) * 1.8 + 32
    return value


def _convert_value(value: float, source: _Unit, target: _Unit) -> float:
    if source.kind == "temperature":
        kelvin = _to_kelvin(value, source.symbol)
        if kelvin < -1e-9:
            raise UnitError(f"{value:g} {source.symbol} is below absolute zero")
        return _from_kelvin(kelvin, target.symbol)
    return value * (source.factor / target.factor)  # the ratio first: no needless overflow


def convert(value: float, from_unit: str, to_unit: str) -> tuple[float, str, str]:
    """``value`` in ``from_unit`` expressed in ``to_unit``; returns (result, from, to symbols).

    A non-finite value, or a result too large for a float, is a ``UnitError``, never ``inf``.
    """
    if not math.isfinite(value):
        raise UnitError("the value must be a finite number")
    source, target = _lookup(from_unit), _lookup(to_unit)
    if source.kind != target.kind:
        raise UnitError(
            f"cannot convert {source.kind} ({source.symbol}) to {target.kind} ({target.symbol})"
        )
    result = _convert_value(value, source, target)
    if not math.isfinite(result):
        raise UnitError(
            f"{value:g} {source.symbol} in {target.symbol} is too large to represent as a number"
        )
    return result, source.symbol, target.symbol
