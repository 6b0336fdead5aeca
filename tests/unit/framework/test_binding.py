"""Reserve, Unreserve, Permit (and waiting at Permit), PreBind and Bind, on the real runtime."""

from __future__ import annotations

import asyncio

import pytest

from builders import make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import BindPlugin, PermitPlugin, Plugin, PreBindPlugin, ReservePlugin
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.waiting import PodAtPermit
from kubesched.infra.clock import VirtualClock

from .fwkit import framework

LOG: list[tuple[str, str]] = []


@pytest.fixture(autouse=True)
def _clear_log() -> None:
    LOG.clear()


class Reserves(Plugin, ReservePlugin, PermitPlugin):
    """Reserve answers `reserve_status`, Permit answers `permit`; every call is logged."""

    reserve_status: Status | None = None
    permit_answer: tuple[Status | None, float] = (None, 0.0)

    def reserve(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        LOG.append(("Reserve", self.name))
        return self.reserve_status

    def unreserve(self, state: CycleState, pi: PodInfo, node: str) -> None:
        LOG.append(("Unreserve", self.name))

    def permit(self, state: CycleState, pi: PodInfo, node: str) -> tuple[Status | None, float]:
        LOG.append(("Permit", self.name))
        return self.permit_answer


class R1(Reserves):
    name = "R1"


class R2(Reserves):
    name = "R2"
    reserve_status = Status.unschedulable("no room left")


class R2Error(Reserves):
    name = "R2Error"
    reserve_status = Status.error("cannot reach the volume service")


class R3(Reserves):
    name = "R3"


def test_reserve_stops_at_the_first_failure_and_names_the_plugin() -> None:
    fwk = framework({"reserve": [R1, R2, R3]})
    status = fwk.run_reserve(CycleState(), make_pod("p").info(), "n0")
    assert status is not None and status.code == Code.UNSCHEDULABLE and status.plugin == "R2"
    assert LOG == [("Reserve", "R1"), ("Reserve", "R2")]


def test_an_error_from_reserve_stays_an_error() -> None:
    fwk = framework({"reserve": [R1, R2Error, R3]})
    status = fwk.run_reserve(CycleState(), make_pod("p").info(), "n0")
    assert status == Status(Code.ERROR, ('running Reserve plugin "R2Error": cannot reach the volume service',), "R2Error")


def test_unreserve_runs_every_plugin_once_in_reverse_order_even_on_repeated_failure() -> None:
    fwk = framework({"reserve": [R1, R2, R3]})
    state, pi = CycleState(), make_pod("p").info()
    for _ in range(3):
        LOG.clear()
        assert fwk.run_reserve(state, pi, "n0") is not None
        fwk.run_unreserve(state, pi, "n0")
        # R3's Reserve never ran, yet it is unreserved too: Unreserve must be idempotent.
        assert LOG == [("Reserve", "R1"), ("Reserve", "R2"), ("Unreserve", "R3"), ("Unreserve", "R2"), ("Unreserve", "R1")]


class Waits(Reserves):
    name = "Waits"
    permit_answer = (Status(Code.WAIT), 30.0)


class WaitsLonger(Reserves):
    name = "WaitsLonger"
    permit_answer = (Status(Code.WAIT), 60.0)


class Denies(Reserves):
    name = "Denies"
    permit_answer = (Status.unschedulable("quota exhausted"), 0.0)


class PermitPending(Reserves):
    name = "PermitPending"
    permit_answer = (Status(Code.PENDING, ("waiting for a quota",)), 0.0)


class PermitSkips(Reserves):
    name = "PermitSkips"
    permit_answer = (Status(Code.SKIP, ("odd",)), 0.0)


class PermitFails(Reserves):
    name = "PermitFails"
    permit_answer = (Status.error("quota service down"), 0.0)


def test_permit_collects_every_wait_with_its_timeout() -> None:
    fwk = framework({"permit": [Waits, R1, WaitsLonger]})
    assert fwk.run_permit(CycleState(), make_pod("p").info(), "n0") == (None, {"Waits": 30.0, "WaitsLonger": 60.0})
    assert LOG == [("Permit", "Waits"), ("Permit", "R1"), ("Permit", "WaitsLonger")]


def test_permit_rejection_stops_and_keeps_its_code() -> None:
    fwk = framework({"permit": [Waits, Denies, R1]})
    status, waits = fwk.run_permit(CycleState(), make_pod("p").info(), "n0")
    assert status == Status(Code.UNSCHEDULABLE, ("quota exhausted",), "Denies")
    assert waits == {"Waits": 30.0}
    assert ("Permit", "R1") not in LOG


def test_pending_at_permit_is_a_rejection_as_in_kube() -> None:
    fwk = framework({"permit": [PermitPending, R1]})
    status, _ = fwk.run_permit(CycleState(), make_pod("p").info(), "n0")
    assert status == Status(Code.PENDING, ("waiting for a quota",), "PermitPending")


@pytest.mark.parametrize(("plugin", "message"), [(PermitFails, "quota service down"), (PermitSkips, "odd")])
def test_permit_anything_else_is_an_error_naming_the_plugin(plugin: type[Reserves], message: str) -> None:
    fwk = framework({"permit": [plugin, R1]})
    status, _ = fwk.run_permit(CycleState(), make_pod("p").info(), "n0")
    assert status == Status(Code.ERROR, (f'running Permit plugin "{plugin.name}": {message}',), plugin.name)
    assert ("Permit", "R1") not in LOG


async def test_a_waiting_pod_is_allowed_once_every_waiting_plugin_allows() -> None:
    fwk = framework({"permit": [Waits, WaitsLonger]})
    _, waits = fwk.run_permit(CycleState(), make_pod("p").info(), "n0")
    clock = VirtualClock()
    waiting = PodAtPermit("uid", "n0", waits, clock)
    waiting.allow("Waits")
    assert not waiting.future.done()
    waiting.allow("WaitsLonger")
    assert waiting.future.done() and waiting.future.result() is None
    # The timers are cancelled: a later timeout changes nothing.
    clock.advance_to(100.0)
    clock.run_due()
    assert waiting.future.result() is None


async def test_a_waiting_pod_times_out_at_the_first_plugins_timeout() -> None:
    fwk = framework({"permit": [WaitsLonger, Waits]})
    _, waits = fwk.run_permit(CycleState(), make_pod("p").info(), "n0")
    clock = VirtualClock()
    waiting = PodAtPermit("uid", "n0", waits, clock)
    waiting.allow("WaitsLonger")
    clock.advance_to(29.0)
    clock.run_due()
    assert not waiting.future.done()
    clock.advance_to(30.0)
    clock.run_due()
    assert waiting.future.result() == Status(
        Code.UNSCHEDULABLE, ("rejected due to timeout after waiting 30s at plugin Waits",), "Waits"
    )


async def test_a_waiting_pod_rejected_by_one_plugin_is_rejected() -> None:
    waiting = PodAtPermit("uid", "n0", {"Waits": 30.0, "WaitsLonger": 60.0}, VirtualClock())
    waiting.reject("WaitsLonger", "gang incomplete")
    waiting.allow("Waits")
    assert waiting.future.result() == Status(Code.UNSCHEDULABLE, ("gang incomplete",), "WaitsLonger")
    await asyncio.sleep(0)


class PreBinds(Plugin, PreBindPlugin, BindPlugin):
    answer: Status | None = None

    async def pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        LOG.append(("PreBind", self.name))
        return self.answer

    async def bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        LOG.append(("Bind", self.name))
        return self.answer


class Fine(PreBinds):
    name = "Fine"


class Skips(PreBinds):
    name = "Skips"
    answer = SKIP


class Broken(PreBinds):
    name = "Broken"
    answer = Status.error("apiserver said no")


async def test_prebind_error_names_the_plugin_and_stops() -> None:
    fwk = framework({"preBind": [Fine, Broken, Skips]})
    status = await fwk.run_pre_bind(CycleState(), make_pod("p").info(), "n0")
    assert status == Status(Code.ERROR, ('running PreBind plugin "Broken": apiserver said no',), "Broken")
    assert LOG == [("PreBind", "Fine"), ("PreBind", "Broken")]


async def test_bind_skips_to_the_next_plugin_and_errors_when_none_binds() -> None:
    fwk = framework({"bind": [Skips, Fine, Broken]})
    assert await fwk.run_bind(CycleState(), make_pod("p").info(), "n0") is None
    assert LOG == [("Bind", "Skips"), ("Bind", "Fine")]
    fwk = framework({"bind": [Skips]})
    status = await fwk.run_bind(CycleState(), make_pod("p").info(), "n0")
    assert status == Status.error("no bind plugin handled the pod")
    fwk = framework({"bind": [Skips, Broken, Fine]})
    status = await fwk.run_bind(CycleState(), make_pod("p").info(), "n0")
    assert status == Status(Code.ERROR, ('running Bind plugin "Broken": apiserver said no',), "Broken")


class Refuses(PreBinds):
    name = "Refuses"
    answer = Status.unschedulable("volume not attachable here")


async def test_a_rejection_at_prebind_or_bind_keeps_its_code_and_message() -> None:
    fwk = framework({"preBind": [Refuses], "bind": [Refuses]})
    expected = Status(Code.UNSCHEDULABLE, ("volume not attachable here",), "Refuses")
    assert await fwk.run_pre_bind(CycleState(), make_pod("p").info(), "n0") == expected
    assert await fwk.run_bind(CycleState(), make_pod("p").info(), "n0") == expected


class PreFlights(Plugin, PreBindPlugin):
    """PreBindPreFlight answers `pre_flight`; PreBind is logged."""

    pre_flight: Status | None = None

    def pre_bind_pre_flight(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        LOG.append(("PreBindPreFlight", self.name))
        return self.pre_flight

    async def pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        LOG.append(("PreBind", self.name))
        return None


class HasWork(PreFlights):
    name = "HasWork"


class NoWork(PreFlights):
    name = "NoWork"
    pre_flight = SKIP


class FlightError(PreFlights):
    name = "FlightError"
    pre_flight = Status.error("state not found")


class FlightRejects(PreFlights):
    name = "FlightRejects"
    pre_flight = Status.unschedulable("no")


class Silent(Plugin, PreBindPlugin):
    """A PreBind plugin that does not answer the pre-flight: taken to have work."""

    name = "Silent"

    async def pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        return None


async def test_pre_flight_is_success_when_any_plugin_has_work_and_prebind_skips_those_without() -> None:
    fwk = framework({"preBind": [NoWork, HasWork]})
    state = CycleState()
    assert fwk.run_pre_bind_pre_flights(state, make_pod("p").info(), "n0") is None
    assert await fwk.run_pre_bind(state, make_pod("p").info(), "n0") is None
    assert LOG == [("PreBindPreFlight", "NoWork"), ("PreBindPreFlight", "HasWork"), ("PreBind", "HasWork")]


def test_pre_flight_is_skip_when_no_plugin_has_work_and_success_for_one_that_does_not_answer() -> None:
    state = CycleState()
    answer = framework({"preBind": [NoWork]}).run_pre_bind_pre_flights(state, make_pod("p").info(), "n0")
    assert answer is not None and answer.code == Code.SKIP and state.skip_pre_bind == {"NoWork"}
    assert framework({"preBind": [NoWork, Silent]}).run_pre_bind_pre_flights(CycleState(), make_pod("p").info(), "n0") is None


def test_pre_flight_errors_and_unsupported_answers_in_kubes_words() -> None:
    fwk = framework({"preBind": [HasWork, FlightError, NoWork]})
    assert fwk.run_pre_bind_pre_flights(CycleState(), make_pod("p").info(), "n0") == Status(
        Code.ERROR, ('running PreBindPreFlight "FlightError": state not found',), "FlightError")
    assert LOG == [("PreBindPreFlight", "HasWork"), ("PreBindPreFlight", "FlightError")]
    fwk = framework({"preBind": [FlightRejects]})
    assert fwk.run_pre_bind_pre_flights(CycleState(), make_pod("p").info(), "n0") == Status(
        Code.ERROR, ('PreBindPreFlight FlightRejects returned "Unschedulable", which is unsupported. '
                     "It is supposed to return Success, Skip, or Error status",), "FlightRejects")
