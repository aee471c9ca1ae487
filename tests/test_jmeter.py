"""JMeter's rules as folioperf applies them (folioperf.jmeter, folioperf.jmx, folioperf.pausing.Timers): numbers
read from text, timers in both readings of a plan, the throughput timer's wait and the pauses adding up, and a
plan read as JMeter runs it (scope, module controllers, disabled elements, loops that never end)."""

from __future__ import annotations

import random
import textwrap

import pytest

from folioperf import jmx
from folioperf.jmeter import AS_RUN, AS_WRITTEN, Delay, ThroughputTimer, Timer, as_double, as_int, as_long, expand
from folioperf.page import uniform
from folioperf.timers import Timers
from tests.workflows import derived


@pytest.mark.parametrize("text, value", [
    ("1000", 1000), (" 1000 ", 1000), ("+5", 5), ("-1", -1),  # Long.parseLong after trim()
    ("1000 + 0", 0), ("1000+0", 0), ("${RequestsPerUser}", 0), ("", 0), ("1e3", 0), ("1000.0", 0),
    ("9223372036854775808", 0),  # above Long.MAX_VALUE: NumberFormatException
])
def test_a_long_that_does_not_parse_is_zero(text, value):
    assert as_long(text) == value


def test_ints_and_doubles_read_as_java_reads_them():
    assert as_int("2147483648") == 0 and as_int(" 7 ") == 7
    assert as_double("2000") == 2000.0 and as_double(" 65.0 ") == 65.0 and as_double("1e3") == 1000.0
    assert as_double("65.0d") == 65.0 and as_double("0x1p3") == 8.0 and as_double(".5") == 0.5
    assert as_double("65 + 0") == 0.0 and as_double("${x}") == 0.0


def test_variables_and_properties_expand_as_jmeter_expands_them():
    variables = {"thinktime_offset": "${__P(THINK_OFFSET,0)}"}
    assert expand("1000 + ${thinktime_offset}", variables) == "1000 + 0"
    assert expand("1000 + ${thinktime_offset}", variables, {"THINK_OFFSET": "250"}) == "1000 + 250"
    assert expand("${undefined}") == "${undefined}"  # left as written
    assert expand("${__P(LOOPS)}") == "1"  # __P's own default


def test_a_timer_written_as_a_sum_waits_its_random_part_only_as_run():
    timer = Timer("uniform", "1000 + ${thinktime_offset}", "2000")
    variables = {"thinktime_offset": "250"}
    assert timer.wait(AS_RUN, variables) == Delay("uniform", 0, 2000)
    assert timer.wait(AS_WRITTEN, variables) == Delay("uniform", 1250, 2000)
    plain = Timer("uniform", "1000", "3000")
    assert plain.wait(AS_RUN) == plain.wait(AS_WRITTEN) == Delay("uniform", 1000, 3000)
    assert Timer("constant", "3000").wait(AS_RUN) == Delay("constant", 3000)


def test_a_page_timer_neither_reading_understands_is_refused():
    with pytest.raises(ValueError, match="not a number or a sum"):
        uniform("${__Random(1,2)} * 2", "100")


def test_delays_draw_what_their_bounds_and_mean_say():
    rng = random.Random(7)
    for delay in (Delay("uniform", 0, 2000), Delay("uniform", 1000, 3000), Delay("gaussian", 500, 300),
                  Delay("uniform", -500, 1000), Delay("constant", 3000)):
        draws = [delay.sample(rng) for _ in range(40_000)]
        assert delay.low <= min(draws) and max(draws) <= delay.high
        assert sum(draws) / len(draws) == pytest.approx(delay.mean, rel=0.02, abs=3)


def test_the_throughput_timer_counts_from_when_the_last_sample_was_due():
    timer = ThroughputTimer(60)  # one sample a second
    assert timer.delay(100.0) == 0.0  # the first goes at once
    assert timer.delay(100.2) == pytest.approx(0.8)  # due at 101
    assert timer.delay(101.5) == pytest.approx(0.5)  # due at 102: counted from when the last was due, not sent
    assert timer.delay(105.0) == 0.0  # behind: goes now, and the schedule restarts from now
    assert timer.delay(105.1) == pytest.approx(0.9)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_the_pauses_before_a_sample_add_to_the_throughput_timers_wait():
    """JMeterThread.delay sums every timer's delay: a 0.3 s pause before a sample due 0.92 s after the last
    one makes the sample go 1.22 s after the pause began, not max(0.92, 0.3)."""
    clock = Clock()
    timers = Timers(clock.sleep, per_minute=65, clock=lambda: clock.now)
    timers.before_sample()  # the first sample: due now
    timers.pause(0.3)
    timers.before_sample()
    assert clock.slept == [0.3, 0.923]
    assert clock.now == pytest.approx(1.223)
    timers.pause(2.0)  # the timer's wait is worked out as the pause begins (1.223: 0.623 before the 1.846 due)
    timers.before_sample()  # and slept on top of it: the sample goes 2.623 s after the pause began
    assert clock.slept[-2:] == [2.0, 0.623] and clock.now == pytest.approx(3.846)


def test_a_flow_control_actions_pause_is_its_own_time_not_a_timers():
    """A Flow Control Action (TestAction, the master plan's VAR line 44897) is a sampler: the throughput timer
    paces it, and its pause is its sample's time, so the next sample goes when it is due, not the pause later
    (folioperf's `action`: before_sample, the pause, spent_in_sample)."""
    clock = Clock()
    timers = Timers(clock.sleep, per_minute=60, clock=lambda: clock.now)
    timers.before_sample()  # the action: due now
    timers.pause(0.4)
    timers.spent_in_sample()
    timers.before_sample()  # the next sample: due 1 s after the action
    assert clock.slept == [0.4, 0.6] and clock.now == pytest.approx(1.0)


def test_without_a_throughput_timer_only_the_pauses_wait():
    clock = Clock()
    timers = Timers(clock.sleep, clock=lambda: clock.now)
    timers.pause(0.5)
    timers.before_sample()
    timers.before_sample()
    assert clock.slept == [0.5]


PLAN = textwrap.dedent("""\
    <?xml version="1.0" encoding="UTF-8"?>
    <jmeterTestPlan version="1.2">
      <hashTree>
        <TestPlan testname="p"><elementProp name="TestPlan.user_defined_variables" elementType="Arguments">
          <collectionProp name="Arguments.arguments"><elementProp name="n" elementType="Argument">
            <stringProp name="Argument.name">offset</stringProp><stringProp name="Argument.value">${__P(OFFSET,0)}</stringProp>
          </elementProp></collectionProp></elementProp></TestPlan>
        <hashTree>
          <ThreadGroup testname="g"><elementProp name="ThreadGroup.main_controller" elementType="LoopController">
            <stringProp name="LoopController.loops">-1</stringProp></elementProp></ThreadGroup>
          <hashTree>
            <HeaderManager testname="outer"><collectionProp name="HeaderManager.headers">
              <elementProp name="" elementType="Header"><stringProp name="Header.name">Accept</stringProp><stringProp name="Header.value">*/*</stringProp></elementProp>
              <elementProp name="" elementType="Header"><stringProp name="Header.name">X-Outer</stringProp><stringProp name="Header.value">1</stringProp></elementProp>
            </collectionProp></HeaderManager><hashTree/>
            <ConstantThroughputTimer testname="ctt"><stringProp name="throughput">${__P(T, 30.0)}</stringProp><intProp name="calcMode">0</intProp></ConstantThroughputTimer><hashTree/>
            <ModuleController testname="mc"><collectionProp name="ModuleController.node_path">
              <stringProp name="1">Test Plan</stringProp><stringProp name="2">p</stringProp><stringProp name="3">g</stringProp><stringProp name="4">frag</stringProp>
            </collectionProp></ModuleController><hashTree/>
            <LoopController testname="never"><stringProp name="LoopController.loops">${undefined}</stringProp></LoopController>
            <hashTree><JSR223Sampler testname="unreached"/><hashTree/></hashTree>
            <LoopController testname="forever"><boolProp name="LoopController.continue_forever">true</boolProp><intProp name="LoopController.loops">-1</intProp></LoopController>
            <hashTree>
              <JSR223Sampler testname="script"/><hashTree/>
              <HTTPSamplerProxy testname="get" enabled="false"><stringProp name="HTTPSampler.path">off</stringProp></HTTPSamplerProxy><hashTree/>
            </hashTree>
            <HTTPSamplerProxy testname="after"><stringProp name="HTTPSampler.path">never</stringProp></HTTPSamplerProxy><hashTree/>
            <TestFragmentController testname="frag"/>
            <hashTree>
              <HTTPSamplerProxy testname="in fragment"><stringProp name="HTTPSampler.method">GET</stringProp><stringProp name="HTTPSampler.path">x/${id}</stringProp></HTTPSamplerProxy>
              <hashTree>
                <UniformRandomTimer testname="t"><stringProp name="ConstantTimer.delay">1000 + ${offset}</stringProp><stringProp name="RandomTimer.range">500</stringProp></UniformRandomTimer><hashTree/>
                <HeaderManager testname="inner"><collectionProp name="HeaderManager.headers">
                  <elementProp name="" elementType="Header"><stringProp name="Header.name">accept</stringProp><stringProp name="Header.value">application/json</stringProp></elementProp>
                </collectionProp></HeaderManager><hashTree/>
              </hashTree>
            </hashTree>
          </hashTree>
        </hashTree>
      </hashTree>
    </jmeterTestPlan>
    """)


def test_a_plan_reads_as_jmeter_runs_it(tmp_path):
    """A module controller runs its fragment in its own place and scope; a loop JMeter reads as 0 runs never,
    one of -1 for ever (nothing after it runs); disabled elements and fragments do not run by themselves; the
    nearest header manager's header wins; a sampler's timers are its own and its ancestors'."""
    path = tmp_path / "plan.jmx"
    path.write_text(PLAN)
    plan = jmx.read(path)
    assert plan.variables == {"offset": "${__P(OFFSET,0)}"}
    group = plan.thread_group("g")
    done = jmx.samples(group, lambda b: 1, plan.variables)
    assert [s.name for s in done] == ["in fragment", "script"]
    fetched = done[0]
    assert dict(fetched.headers) == {"accept": "application/json", "X-Outer": "1"}
    assert [str(d) for d in fetched.pauses(AS_RUN, plan.variables)] == ["U(0, 500) ms"]
    assert [str(d) for d in fetched.pauses(AS_WRITTEN, plan.variables, {"OFFSET": "200"})] == ["U(1200, 1700) ms"]
    assert jmx.throughput_of(fetched, variables=plan.variables) == [(30.0, 0)]
    assert jmx.loop_count(jmx.find(group, "never", "loop"), variables=plan.variables) == 0


def test_a_paced_thread_makes_the_samples_the_throughput_timer_allows():
    """One sample a pass, 1 s pauses: at 30 a minute the timer sets the pace; at 120 a minute the pauses do, and
    the timer adds nothing (it counts from when the pause began)."""
    sample = jmx.Sample("http", "s", (1, 1), "GET", "x", timers=((Timer("constant", "1000"), 1),))
    slow = jmx.samples_per_minute(lambda rng: [sample], per_minute=30, minutes=60)
    fast = jmx.samples_per_minute(lambda rng: [sample], per_minute=120, minutes=60)
    assert slow == pytest.approx(30, rel=0.01)
    assert fast == pytest.approx(60, rel=0.01)


def test_the_cico_plans_pause_as_the_issue_measured():
    """The mean pauses of a check-in and a check-out, as JMeter ran the plans and as written (s)."""
    def mean(release: str, page: str, mode: str) -> float:
        plan = derived.cico(release, page)
        return round(jmx.mean_pause_ms(list(plan.events), mode, plan.variables) / 1000, 1)

    as_run = {r: (mean(r, "check-in", AS_RUN), mean(r, "check-out", AS_RUN)) for r in derived.RELEASES}
    assert as_run == {"honeysuckle": (6.5, 6.5), "kiwi": (6.0, 6.5), "lotus": (6.5, 5.5), "morning-glory": (4.2, 5.5),
                      "nolana": (6.5, 5.5), "orchid": (6.5, 5.5)}
    assert (mean("lotus", "check-in", AS_WRITTEN), mean("lotus", "check-out", AS_WRITTEN)) == (24.5, 12.5)
