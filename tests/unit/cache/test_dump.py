"""/debug/cache: the dump, taken on the scheduler's loop, served on the server's thread."""

from __future__ import annotations

import asyncio

import aiohttp

from kpysched.cache.cache import Cache
from kpysched.cache.dump import PATH, cache_dump, dump_from
from kpysched.metrics import SchedulerMetrics
from kpysched.serving.server import Server, ServerConfig
from kpysched.serving.server_thread import ServerThread
from tests.unit.builders import make_node, make_pod


def a_cache() -> Cache:
    cache = Cache()
    for name in ("n1", "n2"):
        cache.add_or_update_node(make_node(name).capacity(cpu="4", memory="8Gi").obj())
    cache.add_or_update_pod(make_pod("bound").uid("u-bound").node("n1").info())
    cache.assume_pod(make_pod("assumed").uid("u-assumed").info(), "n2")
    # A pod whose node the informer has not reported: placed, but not a node.
    cache.add_or_update_pod(make_pod("early").uid("u-early").node("n3").info())
    return cache


async def test_the_dump_lists_reported_nodes_and_every_placed_pod() -> None:
    dump = cache_dump(a_cache(), lambda: {"active": 1}, lambda: 2, lambda: 3)
    assert dump["nodes"] == ["n1", "n2"]
    assert dump["pods"] == {"u-bound": {"node": "n1", "assumed": False},
                            "u-assumed": {"node": "n2", "assumed": True},
                            "u-early": {"node": "n3", "assumed": False}}
    assert dump["queue"] == {"active": 1} and dump["bindingsInFlight"] == 2
    assert dump["eventsInFlight"] == 3


async def test_the_endpoint_takes_the_dump_on_the_schedulers_loop() -> None:
    cache = a_cache()
    loops: list[asyncio.AbstractEventLoop] = []

    def take() -> dict[str, object]:
        loops.append(asyncio.get_running_loop())
        return cache_dump(cache, dict, lambda: 0, lambda: 0)

    config = ServerConfig(bind_address="127.0.0.1", port=0)
    thread = ServerThread(Server(config, SchedulerMetrics(process_metrics=False),
                                 cache_dump=dump_from(asyncio.get_running_loop(), take)))
    thread.start()
    try:
        async with aiohttp.ClientSession() as session, \
                session.get(thread.url + PATH) as response:
            assert response.status == 200
            body = await response.json()
    finally:
        thread.stop()
    assert loops == [asyncio.get_running_loop()]
    assert body["pods"]["u-assumed"] == {"node": "n2", "assumed": True}


async def test_without_the_flag_there_is_no_cache_endpoint() -> None:
    config = ServerConfig(bind_address="127.0.0.1", port=0)
    async with Server(config, SchedulerMetrics(process_metrics=False)) as server, \
            aiohttp.ClientSession() as session, session.get(server.url + PATH) as response:
        assert response.status == 404
