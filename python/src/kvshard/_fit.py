"""``fit``: the layout that serves the most sequences on N GPUs, for a
model, a deployment or the path of either. The search and its result are
``_fitrows``'s; this module sits above the objects it takes, which do not
import it.
"""

from __future__ import annotations

import os
from ctypes import byref
from typing import Any, Optional

from . import _lib
from ._fitrows import Fit, FitComm, FitRow, NotAdmitted, deployment_fit, fit_options
from ._handles import _new_handle
from ._objects import Deployment, Model, _check, _options_arg, load
from ._options import Options

__all__ = ["Fit", "FitComm", "FitRow", "NotAdmitted", "fit"]


def fit(
    model: Any,
    options: Optional[Options] = None,
    /,
    *,
    gpus: int,
    max_tp_size: int = 0,
    max_pp_size: int = 0,
    pp_size: int = 0,
    dp_size: int = 0,
    unsplit: bool = False,
    rank: str = "auto",
    **fields: Any,
) -> Fit:
    """Search the layouts of `gpus` GPUs for a model (kvshard_fit_create)
    and rank them by the sequences they serve.

    ``model``: a Model (planned under ``options`` and the keyword
    ``fields``), a Deployment (its own options, as ``Deployment.fit``), or
    the path of a model config, model directory or deployment file (read
    with ``load``, the ``fields`` as its overrides). The options give the
    device: ``device_memory`` (required), ``memory_utilization``,
    ``activation_reserve``, ``context_length``, and the weights as
    ``weights_total`` with ``weights_experts`` (without them, the
    safetensors files beside the model's config); ``gpus_per_node`` sets
    the node (default 8). The search's own limits: ``max_tp_size`` (0: the
    node), ``max_pp_size`` (0: one stage a node), and the pins
    ``pp_size``, ``dp_size`` (0: every size) and ``unsplit`` (no
    layerwise split). ``rank``: "auto" (by throughput when the comm
    inputs give one: an accelerator, a link and a context length; else by
    capacity), "capacity" or "throughput" (ConfigError, EMISSING, without
    those inputs); each row's estimate is ``FitRow.comm``, the choice
    ``Fit.rank_by``. The caller owns the returned Fit.

    Errors: WeightsError (no weights, or weights_per_rank, which a fit
    works out itself), DoesNotFitError (no layout leaves a budget; the
    message names the closest), FitLimitsError (the limits leave no
    layout), PlanError (ENOBLOCK: no layout fits a block; EPROFILE,
    pp_engine, stages asked of an engine without them), ConfigError (EMISSING without device_memory), and the first
    layout's error when none is admitted.

    Under an engine profile (``engine="vllm"``, ``"sglang"``, ``"xllm"``
    or ``"trtllm"``, its version as
    ``engine_version``, its own inputs as keywords) every row is planned
    by that profile at the length (``context_length``, else the engine's
    length input, else the config's ``max_position_embeddings``) and ranked
    by the sequences the engine itself serves; ``Fit.flags`` gives that
    engine's launch line (every figure its profile's) and the kvshard line
    that replans it, and None for the other engines.
    """
    fo = fit_options(gpus, max_tp_size, max_pp_size, pp_size, dp_size, unsplit, rank)
    if isinstance(model, Deployment):
        if options is not None or fields:
            raise TypeError("a Deployment fits with its own options: use deployment.set()")
        with model._use() as h:
            return deployment_fit(h, fo)
    if isinstance(model, (str, os.PathLike)):
        if options is not None:
            raise TypeError("options go with a Model; give a path's options as keywords")
        with load(model, **fields) as dep, dep._use() as h:
            return deployment_fit(h, fo)
    if not isinstance(model, Model):
        raise TypeError(
            f"model must be a kvshard.Model, Deployment or a path, not {type(model).__name__}"
        )
    opts = _options_arg(options, **fields)
    fo.gpus_per_node = opts.gpus_per_node
    with model._use() as h, opts._passed() as c:
        rc, out, err = _new_handle(
            _lib.library().kvshard_fit_create, h, byref(c), byref(fo), None
        )
    _check(rc, err)
    return Fit(out)
