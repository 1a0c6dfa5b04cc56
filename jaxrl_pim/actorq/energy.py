"""Optional energy / carbon tracking through codecarbon's ``OfflineEmissionsTracker``.

``EnergyTracker`` is a context manager; without codecarbon installed (it is an optional
extra: ``pip install "codecarbon>=3,<4"``) it does nothing and its ``result()`` says so.
The country is always given explicitly (offline mode, no network look-up). codecarbon
*measures* CPU power only through RAPL / Power Gadget / powermetrics; otherwise (for
example on a VM or a container without ``/sys/class/powercap``) it *estimates* from the
CPU's TDP and load, and RAM power is always modelled. ``result()["estimated"]`` and
``result()["note"]`` report which one happened, so numbers are never passed off as measured.
"""

from __future__ import annotations

import logging
from typing import Any

_MEASURED_CPU_MODES = ("intel_rapl", "intel_power_gadget", "apple_powermetrics", "rapl")


class EnergyTracker:
    """``with EnergyTracker(enabled=True, country_iso_code="USA") as et: ...; et.result()``."""

    def __init__(self, enabled: bool = True, country_iso_code: str = "USA",
                 project_name: str = "jaxrl_pim.actorq") -> None:
        if not isinstance(country_iso_code, str) or len(country_iso_code) != 3:
            raise ValueError(
                f"country_iso_code must be a 3-letter ISO code such as 'USA', got "
                f"{country_iso_code!r}"
            )
        self.enabled = enabled
        self.country_iso_code = country_iso_code.upper()
        self.project_name = project_name
        self._tracker: Any = None
        self._result: dict[str, Any] = {
            "available": False,
            "note": "energy tracking disabled" if not enabled else "not started",
        }

    def __enter__(self) -> EnergyTracker:
        if not self.enabled:
            return self
        try:
            from codecarbon import OfflineEmissionsTracker
        except ImportError:
            self._result = {
                "available": False,
                "note": 'codecarbon is not installed (pip install "codecarbon>=3,<4"); '
                "no energy or carbon numbers",
            }
            return self
        logging.getLogger("codecarbon").setLevel(logging.ERROR)
        kwargs = dict(country_iso_code=self.country_iso_code, project_name=self.project_name,
                      log_level="error")
        try:  # codecarbon >= 3.2: no output files via output_methods=[]
            self._tracker = OfflineEmissionsTracker(output_methods=[], **kwargs)
        except TypeError:  # older releases
            self._tracker = OfflineEmissionsTracker(save_to_file=False, **kwargs)
        self._tracker.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._tracker is None:
            return
        emissions = self._tracker.stop()
        data = getattr(self._tracker, "final_emissions_data", None)
        modes = [getattr(h, "_mode", None) for h in getattr(self._tracker, "_hardware", [])]
        cpu_modes = [m for m in modes if m is not None]
        measured = any(str(m) in _MEASURED_CPU_MODES for m in cpu_modes)
        note = (
            "CPU power measured by codecarbon (" + ", ".join(map(str, cpu_modes)) + "); RAM "
            "power modelled"
            if measured
            else "power ESTIMATED by codecarbon, not measured (CPU mode: "
            + (", ".join(map(str, cpu_modes)) or "unknown")
            + "; no RAPL access, TDP/load model; RAM power modelled)"
        )
        self._result = {
            "available": True,
            "estimated": not measured,
            "country_iso_code": self.country_iso_code,
            "emissions_kg": float(emissions) if emissions is not None else None,
            "energy_kwh": float(getattr(data, "energy_consumed", float("nan"))),
            "duration_s": float(getattr(data, "duration", float("nan"))),
            "cpu_power_w": float(getattr(data, "cpu_power", float("nan"))),
            "note": note,
        }
        self._tracker = None

    def result(self) -> dict[str, Any]:
        """Energy (kWh), emissions (kg CO2eq), whether estimated, and a note."""
        return dict(self._result)
