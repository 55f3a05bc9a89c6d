"""A fast stand-in for the AWS calls of an idle sweep, on 127.0.0.1, answering from a `Fleet`.

moto needs ~100 s for one DescribeInstances over 10,000 instances and seconds per GetMetricData
query; this answers the same calls in the same wire formats (EC2 query/XML; CloudWatch, DynamoDB,
Secrets Manager and Pricing in JSON 1.0/1.1, which botocore prefers over CBOR and query; STS in
query/XML) with AWS's paging and limits, counts every call by operation, and sleeps an injectable
latency before each answer. Anything it does not implement is answered with a 400 and recorded, so
a tool that needs more than this fails loudly instead of being measured on half its work.

Each service is answered by its stand-in in testing/aws (EC2 by ec2.py over the fleet's machines,
CloudWatch by cloudwatch.py, DynamoDB, Secrets Manager, Pricing), with their limits: DescribeInstances
pages of 5-1,000 (all at once without MaxResults), CreateTags/DeleteTags at most 1,000 resources,
ListMetrics 500 a page, GetMetricData at most 500 queries and 100,800 points a call (then NextToken),
GetMetricStatistics at most 1,440 points, dimension sets matched exactly.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from testing import local_http
from testing.aws.cloudwatch import CloudWatch, Listed, Points, SeriesKey, bucketed
from testing.aws.dynamodb import DynamoDB
from testing.aws.ec2 import OPERATIONS as EC2_OPERATIONS
from testing.aws.ec2 import Ec2, Ec2Instance, Ec2World
from testing.aws.errors import ApiError
from testing.aws.pricing import Pricing
from testing.aws.secretsmanager import SecretsManager
from testing.worlds.fleet import Fleet, Series, SimInstance


class StandIn(local_http.Served):
    http11 = True

    def __init__(self, fleet: Fleet, *, latency_s: float = 0.0, secret: Mapping[str, str] | None = None) -> None:
        self.fleet = fleet
        self.latency_s = latency_s
        self.secrets = SecretsManager({"costguard/slack": json.dumps(dict(secret or {}))})
        self.machines = FleetMachines(fleet)
        self.ec2 = Ec2(self.machines)
        self.state, self.tags, self.by_id = self.machines.state, self.machines.tags, self.machines.by_id
        self.stopped = self.machines.stopped  # in the order StopInstances saw them
        self.calls: Counter[str] = Counter()
        self.unsupported: list[str] = []
        self.busy_s = 0.0  # time spent building answers (not sleeping): the stand-in's share of a run
        self.cloudwatch = CloudWatch(FleetMetrics(fleet))
        self.dynamodb = DynamoDB()
        self.pricing = Pricing()  # answers nothing: costguard prices from its bundled table
        self._lock = threading.Lock()
        self._json: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "GraniteServiceVersion20100801.ListMetrics": self.cloudwatch.list_metrics,
            "GraniteServiceVersion20100801.GetMetricData": self.cloudwatch.get_metric_data,
            "GraniteServiceVersion20100801.GetMetricStatistics": self.cloudwatch.get_metric_statistics,
            "GraniteServiceVersion20100801.PutDashboard": self.cloudwatch.put_dashboard,
            "DynamoDB_20120810.BatchWriteItem": self.dynamodb.batch_write_item,
            "DynamoDB_20120810.PutItem": self.dynamodb.put_item,
            "DynamoDB_20120810.DeleteItem": self.dynamodb.delete_item,
            "DynamoDB_20120810.GetItem": self.dynamodb.get_item,
            "DynamoDB_20120810.UpdateItem": self.dynamodb.update_item,
            "DynamoDB_20120810.Query": self.dynamodb.query,
            "DynamoDB_20120810.TransactWriteItems": self.dynamodb.transact_write_items,
            "DynamoDB_20120810.BatchGetItem": self.dynamodb.batch_get_item,
            "secretsmanager.GetSecretValue": self.secrets.get_secret_value,
            "AWSPriceListService.GetProducts": self.pricing.get_products,
        }
        self._query: dict[str, Callable[[dict[str, list[str]]], str]] = {
            **dict.fromkeys(EC2_OPERATIONS, self._ec2),
            "GetCallerIdentity": lambda _: (
                '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
                "<GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/bench</Arn>"
                "<UserId>AIDABENCH</UserId><Account>123456789012</Account></GetCallerIdentityResult>"
                "</GetCallerIdentityResponse>"
            ),
        }

    def _ec2(self, form: dict[str, list[str]]) -> str:
        return self.ec2.query(form)  # the world's EC2 (a subclass may give it another)

    # ------------------------------------------------------------------ server
    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        raw = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        target = request.headers.get("X-Amz-Target")
        if target:
            operation = target.split(".", 1)[-1]
            handler: Callable[[], tuple[str, bytes, dict[str, str]]] = lambda: self._json_call(target, raw)  # noqa: E731
        else:
            form = parse_qs(raw.decode(), keep_blank_values=True)
            operation = (form.get("Action") or ["?"])[0]
            handler = lambda: self._query_call(operation, form)  # noqa: E731
        service = self._service(target, operation)
        with self._lock:
            self.calls[f"{service}:{operation}"] += 1
        if self.latency_s:
            time.sleep(self.latency_s)
        started = time.perf_counter()
        try:
            content_type, body, headers = handler()
            status = 200
        except ApiError as exc:
            status = exc.status
            content_type, body, headers = self._error(target, exc)
        with self._lock:
            self.busy_s += time.perf_counter() - started
        request.send_response(status)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(body)))
        request.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for key, value in headers.items():
            request.send_header(key, value)
        request.end_headers()
        request.wfile.write(body)

    @staticmethod
    def _service(target: str | None, operation: str) -> str:
        if target:
            prefix = target.split(".", 1)[0]
            return {
                "GraniteServiceVersion20100801": "cloudwatch",
                "DynamoDB_20120810": "dynamodb",
                "secretsmanager": "secretsmanager",
                "AWSPriceListService": "pricing",
            }.get(prefix, prefix)
        return "sts" if operation == "GetCallerIdentity" else "ec2"

    def _json_call(self, target: str, raw: bytes) -> tuple[str, bytes, dict[str, str]]:
        handler = self._json.get(target)
        if handler is None:
            self._unsupported(target)
        assert handler is not None
        body = json.dumps(handler(json.loads(raw or b"{}"))).encode()
        return "application/x-amz-json-1.0", body, {}

    def _query_call(self, operation: str, form: dict[str, list[str]]) -> tuple[str, bytes, dict[str, str]]:
        handler = self._query.get(operation)
        if handler is None:
            self._unsupported(operation)
        assert handler is not None
        return "text/xml", handler(form).encode(), {}

    def _unsupported(self, what: str) -> None:
        with self._lock:
            self.unsupported.append(what)
        raise ApiError("UnsupportedByStandIn", f"the benchmark stand-in does not implement {what}")

    @staticmethod
    def _error(target: str | None, exc: ApiError) -> tuple[str, bytes, dict[str, str]]:
        if target:
            body = json.dumps({"__type": f"com.amazonaws#{exc.code}", "message": exc.message, **exc.extra}).encode()
            return "application/x-amz-json-1.0", body, {"x-amzn-query-error": f"{exc.code};Sender"}
        xml = (
            f"<Response><Errors><Error><Code>{escape(exc.code)}</Code><Message>{escape(exc.message)}</Message>"
            f"</Error></Errors><RequestID>{uuid.uuid4()}</RequestID></Response>"
        )
        return "text/xml", xml.encode(), {}

    # ------------------------------------------------------------------ results
    def stopped_indexes(self) -> set[int]:
        return {self.by_id[i].index for i in self.stopped}


class FleetMachines(Ec2World):
    """The fleet's machines for testing/aws/ec2.py: all running from the fleet's launch, in us-east-1a; a stop
    stops one at once (and is remembered in order)."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.state = {i.instance_id: "running" for i in fleet.instances}
        self.tags = {i.instance_id: fleet.tags(i) for i in fleet.instances}
        self.by_id: dict[str, SimInstance] = {i.instance_id: i for i in fleet.instances}
        self.stopped: list[str] = []

    def instances(self) -> list[Ec2Instance]:
        return [self._machine(i) for i in self.fleet.instances]

    def _machine(self, instance: SimInstance) -> Ec2Instance:
        iid = instance.instance_id
        return Ec2Instance(
            iid,
            instance.instance_type,
            self.state[iid],
            self.fleet.launch,
            self.tags[iid],
            hibernation_configured=False,
            zone="us-east-1a",
            private_dns_name=f"ip-10-0-{instance.index // 250}-{instance.index % 250}.ec2.internal",
            platform="Linux/UNIX",
            volume_id=f"vol-{instance.index:017x}",
            reservation_id=f"r-{instance.index:017x}",
            owner_id="123456789012",
            image_id="ami-0bench",
            extra={"Architecture": "x86_64", "Monitoring": {"State": "disabled"}},
        )

    def stop(self, instance_id: str, hibernate: bool) -> None:
        if self.state[instance_id] == "running":
            self.stopped.append(instance_id)
        self.state[instance_id] = "stopped"


class FleetMetrics:
    """The fleet's series for testing/aws/cloudwatch.py: every one listed (all were active in the last three
    hours), points from the fleet's model, rolled up at the period asked."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.by_key: dict[SeriesKey, Series] = {s.key: s for s in fleet.series}

    def listed(self, recently_active: bool) -> list[Listed]:
        return [(s.namespace, s.name, s.dims) for s in self.fleet.series]

    def points(self, key: SeriesKey, start: float, end: float, period: int, stat: str) -> Points | None:
        series = self.by_key.get(key)
        if series is None:
            return None
        return bucketed(self.fleet.points(series, int(start), int(end)), start, period, stat)
