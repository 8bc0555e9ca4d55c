"""Small mechanisms with no domain, below everything but the data: a clock (``clock``),
cancellations that land where their owner catches them (``interrupt``), running a coroutine from
blocking code (``blocking``), names loaded on first use (``lazy``), whole writes (``writes``) and
race-free opens (``openat``)."""
