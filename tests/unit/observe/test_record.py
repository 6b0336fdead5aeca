from kubesched.observe.record import fit_error_message


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
        1, [("Insufficient cpu", 1)], post_filter_msg="preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod"
    )
    assert msg.endswith("1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
