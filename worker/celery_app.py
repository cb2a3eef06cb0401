"""The Celery application: Redis broker and result backend, tasks acknowledged late.

Tasks are level-triggered ("make the graph match this source now"), so a redelivery after a
crash or a duplicate is harmless; acks_late plus reject_on_worker_lost means a task that was
running when its worker died is delivered again rather than lost.
"""

from __future__ import annotations

from celery import Celery

from worker import task_names as names
from worker.runtime.redis_server import broker_url
from worker.settings import Settings, load_settings

RESTORE_SWEEP = 5  # seconds
# A sweep takes milliseconds; a worker killed while holding the sweep's lock must not stop every
# other worker's sweeps for kombu's default five minutes.
RESTORE_MUTEX_EXPIRE = 30
HELD_PROBLEMS_SWEEP = 60  # seconds between moves of problems held in Redis (graph down) into the graph
TASK_MODULES = ["worker.tasks.maintenance", "worker.tasks.documents", "worker.tasks.warehouse", "worker.tasks.themes"]


def beat_schedule(settings: Settings) -> dict[str, dict]:
    schedule: dict[str, dict] = {
        "reconcile-documents": {"task": names.RECONCILE_DOCUMENTS, "schedule": settings.documents.reconcile_interval},
        "reconcile-warehouse": {"task": names.SYNC_WAREHOUSE, "schedule": settings.warehouse.reconcile_interval},
        "settle-held-problems": {"task": names.SETTLE_HELD_PROBLEMS, "schedule": HELD_PROBLEMS_SWEEP},
        "refresh-bridge": {"task": names.REFRESH_BRIDGE, "schedule": settings.bridge.refresh_interval},
    }
    if settings.knowledge_catalog.project:
        schedule["sync-catalog-glossary"] = {"task": names.SYNC_CATALOG_GLOSSARY, "schedule": settings.knowledge_catalog.sync_interval}
    if settings.warehouse.engine in ("bigquery", "postgres") and settings.warehouse.jobs_poll_interval:
        schedule["poll-jobs"] = {"task": names.POLL_JOBS, "schedule": settings.warehouse.jobs_poll_interval}
    return schedule


def celery_config(settings: Settings) -> dict[str, object]:
    url = broker_url(settings)
    return {
        "broker_url": url,
        "result_backend": url,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        # Redis has no AMQP acks: a taken task sits in `unacked` until acknowledged, and is given
        # back once older than the visibility timeout (kombu's default: an hour). Swept every
        # RESTORE_SWEEP seconds, so a crashed worker's tasks return within timeout + sweep.
        "broker_transport_options": {
            "visibility_timeout": settings.worker.visibility_timeout,
            "unacked_restore_interval": RESTORE_SWEEP,
            "unacked_restore_throttle": 1,
            "unacked_mutex_expire": RESTORE_MUTEX_EXPIRE,
        },
        "result_expires": 3600,
        "broker_connection_retry_on_startup": True,
        "worker_hijack_root_logger": False,
        "worker_concurrency": settings.worker.concurrency or None,
        "beat_schedule": beat_schedule(settings),
    }


def create_app(settings: Settings) -> Celery:
    """A client app for explicit settings (doctor, tests); tasks are sent to it by name."""
    app = Celery("lakegraph", set_as_current=False)
    app.conf.update(celery_config(settings))
    return app


def configured_app(include: list[str]) -> Celery:
    """An app for the configured settings, read lazily, on first use, so importing task modules
    needs no running Redis."""
    configured = Celery("lakegraph", include=include)
    configured.add_defaults(lambda: celery_config(load_settings()))
    return configured


# The worker's app, and beat's (`-A worker.celery_app:beat_app`): beat sends tasks by name, and
# the task modules would load the graph, warehouse and themes code into a process that runs none.
app = configured_app(TASK_MODULES)
beat_app = configured_app([])
