"""The scheduling queue and the nominator."""

from kubesched.queue.scheduling_queue import Nominator, QueuedPodInfo, SchedulingQueue

__all__ = ["Nominator", "QueuedPodInfo", "SchedulingQueue"]
