from kubesched.framework.status import fit_error_message
from kubesched.observe.record import DecisionRecord, Recorder


def test_kube_format_sorted_and_summed():
    msg = fit_error_message(
        3,
        [
            ("node(s) were unschedulable", 1),
            ("Insufficient cpu", 1),
            ("node(s) had untolerated taint {dedicated: gpu}", 1),
        ],
    )
    assert msg == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}, "
        "1 node(s) were unschedulable."
    )


def test_counts_of_one_reason_add_up_and_sort_as_strings():
    msg = fit_error_message(10, [("node(s) didn't match node selector", 10), ("Insufficient cpu", 4)])
    assert msg == "0/10 nodes are available: 10 node(s) didn't match node selector, 4 Insufficient cpu."


def test_prefilter_and_postfilter_messages():
    msg = fit_error_message(2, [], pre_filter_msg="pod has unbound immediate PersistentVolumeClaims")
    assert msg == "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    msg = fit_error_message(
        1, [("Insufficient cpu", 1)], post_filter_msg="preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert msg.endswith("1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")


def _record(key: str, uid: str, result: str = "unschedulable") -> DecisionRecord:
    return DecisionRecord(key, "default-scheduler", 1, 0.0, 3, uid, result=result)


def test_forget_drops_the_latest_record_of_a_gone_pod_but_keeps_the_history():
    recorder = Recorder(history=10)
    recorder.add(_record("default/a", "uid-a"))
    recorder.add(_record("default/b", "uid-b"))
    recorder.forget("uid-a")
    assert set(recorder.latest) == {"default/b"}
    assert [r.pod for r in recorder.recent] == ["default/a", "default/b"]
    recorder.forget("uid-a")  # twice, or a uid never recorded: nothing happens
    recorder.forget("never-seen")
    assert set(recorder.latest) == {"default/b"}


def test_forgetting_an_old_pod_keeps_the_record_of_its_successor_of_the_same_name():
    recorder = Recorder()
    recorder.add(_record("default/web-0", "old"))
    recorder.add(_record("default/web-0", "new"))
    recorder.forget("old")
    assert recorder.latest["default/web-0"].uid == "new"
    recorder.forget("new")
    assert recorder.latest == {}
    assert recorder._key_of == {}


def test_records_of_a_long_churn_stay_bounded_by_the_live_pods():
    recorder = Recorder(history=100)
    for i in range(10_000):
        recorder.add(_record(f"default/p{i}", f"u{i}"))
        if i >= 5:
            recorder.forget(f"u{i - 5}")  # five pods alive at a time
    assert len(recorder.latest) == 5 and len(recorder._key_of) == 5
    assert len(recorder.recent) == 100
