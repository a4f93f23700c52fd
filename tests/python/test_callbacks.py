# SPDX-License-Identifier: Apache-2.0
"""A subscriber callback is called (msg) or (msg, info) as its signature
says, decided once when the subscriber is made (as C++ decides from the
callable's type); with_info=True/False overrides; a callable that takes
neither one nor two positional arguments is refused at once, not on every
message. One process: the node's own publisher feeds its subscribers (inproc)."""

import functools
import itertools

import pytest

import gecko
from gecko.msgs import Float64

from conftest import eventually

_ids = itertools.count()


@pytest.fixture
def node():
    with gecko.Node("callbacks%d" % next(_ids), "cb", discovery=False, transports=("inproc",)) as n:
        yield n


class Recorder:
    """What one callback form was called with: the arguments of each call."""

    def __init__(self):
        self.calls = []

    def one(self, msg):
        self.calls.append((msg,))

    def two(self, msg, info):
        self.calls.append((msg, info))

    def __call__(self, msg, info):
        self.calls.append((msg, info))


def deliver(node, subscribers, topic="v", n=3):
    """Publishes n values until every subscriber has seen them, spinning the node."""
    pub = node.publisher(topic, Float64)
    assert pub.wait_for_subscribers(len(subscribers), timeout=10.0)
    for i in range(n):
        pub.publish(Float64(data=float(i)))
    eventually(lambda: node.spin_once(0.05) >= 0 and all(len(r.calls) >= n for r, _ in subscribers), 10,
               "every callback")
    for r, sub in subscribers:
        assert sub.stats().callback_errors == 0


def args_of(recorder):
    return [len(c) for c in recorder.calls]


def test_the_signature_decides(node):
    forms = {}

    def add(name, make_callback, **kw):
        r = Recorder()
        forms[name] = (r, node.subscriber("v", Float64, callback=make_callback(r), depth=64, **kw))

    add("def (msg)", lambda r: r.one)
    add("def (msg, info)", lambda r: r.two)
    add("lambda msg, info", lambda r: (lambda msg, info: r.calls.append((msg, info))))
    add("lambda msg", lambda r: (lambda msg: r.calls.append((msg,))))
    add("__call__(self, msg, info)", lambda r: r)
    add("partial(f, tag) of f(tag, msg, info)",
        lambda r: functools.partial(lambda tag, msg, info: r.calls.append((msg, info)), "tag"))
    add("*args", lambda r: (lambda *a: r.calls.append(a)))
    add("(msg, info=None)", lambda r: (lambda msg, info=None: r.calls.append((msg,) if info is None else (msg, info))))
    add("(msg, info=None), with_info=True",
        lambda r: (lambda msg, info=None: r.calls.append((msg,) if info is None else (msg, info))), with_info=True)
    add("(msg, info), with_info=True", lambda r: r.two, with_info=True)
    add("(msg), with_info=False", lambda r: r.one, with_info=False)
    deliver(node, list(forms.values()))
    want_info = {"def (msg, info)", "lambda msg, info", "__call__(self, msg, info)",
                 "partial(f, tag) of f(tag, msg, info)", "(msg, info=None), with_info=True",
                 "(msg, info), with_info=True"}
    for name, (r, _) in forms.items():
        assert set(args_of(r)) == {2 if name in want_info else 1}, name
        assert [c[0].data for c in r.calls[:3]] == [0.0, 1.0, 2.0], name
        if name in want_info:
            info = r.calls[0][1]
            assert isinstance(info, gecko.MessageInfo) and info.topic == "v" and info.sequence == 1, name


def test_a_builtin_takes_the_message(node):
    r = Recorder()
    r.calls = []
    sub = node.subscriber("v", Float64, callback=r.calls.append)  # list.append: (object, /)
    deliver(node, [(r, sub)])
    assert [m.data for m in r.calls[:3]] == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("callback,words", [
    (lambda: None, "takes 0 positional arguments"),
    (lambda a, b, c: None, "takes 3 positional arguments"),
    (lambda a, b, c, d=1: None, "takes 3 to 4 positional arguments"),
    (lambda msg, *, info: None, "takes the keyword-only argument info"),
    (42, "is not callable"),
])
def test_a_callback_of_another_arity_is_refused_at_once(node, callback, words):
    with pytest.raises(gecko.Error) as e:
        node.subscriber("v", Float64, callback=callback)
    assert e.value.code == "invalid_argument"
    assert "subscriber of 'v'" in str(e.value) and words in str(e.value), str(e.value)
    if callable(callback):
        assert "a subscriber callback takes (msg) or (msg, info)" in str(e.value)


def test_an_override_the_callback_cannot_take_is_refused(node):
    with pytest.raises(gecko.Error, match=r"with_info=True calls the callback .* with \(msg, info\), but it takes 1 "
                                          r"positional argument"):
        node.subscriber("v", Float64, callback=lambda msg: None, with_info=True)
    with pytest.raises(gecko.Error, match=r"with_info=False calls the callback .* with \(msg\), but it takes 2 "
                                          r"positional arguments"):
        node.subscriber("v", Float64, callback=lambda msg, info: None, with_info=False)


def test_without_a_callback_with_info_is_the_default_of_receive(node):
    plain = node.subscriber("w", Float64, depth=8)
    with_info = node.subscriber("w", Float64, depth=8, with_info=True)
    pub = node.publisher("w", Float64)
    assert pub.wait_for_subscribers(2, timeout=10.0)
    pub.publish(Float64(data=7.0))
    assert plain.receive(timeout=10.0) == Float64(data=7.0)
    msg, info = with_info.receive(timeout=10.0)
    assert msg == Float64(data=7.0) and info.sequence == 1
