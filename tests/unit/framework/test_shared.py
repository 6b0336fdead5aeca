"""SharedObjects: one object of each type per scheduler, made on first request or provided."""

from __future__ import annotations

from kubesched.framework.shared import SharedObjects


class Service:
    made = 0

    def __init__(self) -> None:
        Service.made += 1
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class Plain:
    pass


def test_the_first_request_makes_it_and_later_ones_share_it() -> None:
    Service.made = 0
    shared = SharedObjects()
    assert shared.find(Service) is None
    first = shared.get(Service, Service)
    assert shared.get(Service, Service) is first and shared.find(Service) is first
    assert Service.made == 1


def test_a_provided_object_is_used_instead_of_making_one() -> None:
    provided = Plain()
    shared = SharedObjects([provided])
    assert shared.get(Plain, lambda: Plain()) is provided


async def test_close_closes_what_holds_something_open() -> None:
    shared = SharedObjects([Plain()])
    service = shared.get(Service, Service)
    await shared.close()
    assert service.closed
