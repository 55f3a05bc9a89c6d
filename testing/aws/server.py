"""A fast stand-in for the AWS calls of an idle sweep, on 127.0.0.1, answering from a `Fleet`.

moto needs ~100 s for one DescribeInstances over 10,000 instances and seconds per GetMetricData
query; this answers the same calls in the same wire formats (EC2 query/XML; CloudWatch, DynamoDB,
Secrets Manager and Pricing in JSON 1.0/1.1, which botocore prefers over CBOR and query; STS in
query/XML) with AWS's paging and limits, counts every call by operation, and sleeps an injectable
latency before each answer. Anything it does not implement is answered with a 400 and recorded, so
a tool that needs more than this fails loudly instead of being measured on half its work.

Limits kept: DescribeInstances pages of 5-1,000 (all at once without MaxResults), ListMetrics 500
a page, GetMetricData at most 500 queries and 100,800 points a call (then NextToken),
GetMetricStatistics at most 1,440 points, CreateTags/DeleteTags at most 1,000 resources. Dimension
sets match exactly, as in CloudWatch. Start times round down to the minute, as CloudWatch does.
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from testing import local_http
from testing.aws.cloudwatch import CloudWatch, Listed, Points, SeriesKey, bucketed
from testing.aws.dynamodb import DynamoDB
from testing.aws.errors import ApiError
from testing.aws.pricing import Pricing
from testing.aws.secretsmanager import SecretsManager
from testing.worlds.fleet import Fleet, Series, SimInstance

EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
MAX_TAG_RESOURCES = 1_000
STATE_CODES = {"running": 16, "stopping": 64, "stopped": 80}


class StandIn:
    def __init__(self, fleet: Fleet, *, latency_s: float = 0.0, secret: Mapping[str, str] | None = None) -> None:
        self.fleet = fleet
        self.latency_s = latency_s
        self.secrets = SecretsManager({"costguard/slack": json.dumps(dict(secret or {}))})
        self.state = {i.instance_id: "running" for i in fleet.instances}
        self.tags = {i.instance_id: fleet.tags(i) for i in fleet.instances}
        self.by_id: dict[str, SimInstance] = {i.instance_id: i for i in fleet.instances}
        self.stopped: list[str] = []  # in the order StopInstances saw them
        self.calls: Counter[str] = Counter()
        self.unsupported: list[str] = []
        self.busy_s = 0.0  # time spent building answers (not sleeping): the stand-in's share of a run
        self.cloudwatch = CloudWatch(FleetMetrics(fleet))
        self.dynamodb = DynamoDB()
        self.pricing = Pricing()  # answers nothing: costguard prices from its bundled table
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
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
            "DescribeInstances": self.describe_instances,
            "StopInstances": self.stop_instances,
            "CreateTags": self.create_tags,
            "DeleteTags": self.delete_tags,
            "GetCallerIdentity": lambda _: (
                '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
                "<GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/bench</Arn>"
                "<UserId>AIDABENCH</UserId><Account>123456789012</Account></GetCallerIdentityResult>"
                "</GetCallerIdentityResponse>"
            ),
        }

    # ------------------------------------------------------------------ server
    def start(self) -> StandIn:
        self._server = local_http.serve(self._handle, http11=True)
        return self

    def stop(self) -> None:
        local_http.stop(self._server)

    @property
    def url(self) -> str:
        assert self._server is not None
        return local_http.url(self._server)

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

    # ------------------------------------------------------------------ EC2
    def describe_instances(self, form: dict[str, list[str]]) -> str:
        ids = _members(form, "InstanceId")
        max_results = form.get("MaxResults", [""])[0]
        if ids and max_results:
            raise ApiError("InvalidParameterCombination", "MaxResults cannot be used with InstanceIds")
        filters = self._filters(form)
        with self._lock:
            chosen = [self.by_id[i] for i in ids if i in self.by_id] if ids else list(self.fleet.instances)
            missing = [i for i in ids if i not in self.by_id]
            if missing:
                raise ApiError("InvalidInstanceID.NotFound", f"The instance IDs '{', '.join(missing)}' do not exist")
            matched = [i for i in chosen if all(f(i) for f in filters)]
            start = int(form.get("NextToken", ["0"])[0] or 0)
            size = len(matched)
            if max_results:
                size = int(max_results)
                if not 5 <= size <= 1000:
                    raise ApiError("InvalidParameterValue", f"MaxResults must be 5 to 1000, not {size}")
            page = matched[start : start + size]
            body = "".join(self._reservation(i) for i in page)
        token = f"<nextToken>{start + size}</nextToken>" if start + size < len(matched) else ""
        return (
            f'<DescribeInstancesResponse xmlns="{EC2_NS}"><requestId>{uuid.uuid4()}</requestId>'
            f"<reservationSet>{body}</reservationSet>{token}</DescribeInstancesResponse>"
        )

    def _filters(self, form: dict[str, list[str]]) -> list[Callable[[SimInstance], bool]]:
        out: list[Callable[[SimInstance], bool]] = []
        for n in itertools.count(1):
            name = form.get(f"Filter.{n}.Name", [""])[0]
            if not name:
                return out
            values = _members(form, f"Filter.{n}.Value")
            out.append(self._filter(name, values))
        return out

    def _filter(self, name: str, values: list[str]) -> Callable[[SimInstance], bool]:
        def matches(actual: str) -> bool:
            return any(fnmatch.fnmatchcase(actual, v) for v in values)

        if name == "instance-state-name":
            return lambda i: matches(self.state[i.instance_id])
        if name == "instance-type":
            return lambda i: matches(i.instance_type)
        if name == "instance-id":
            return lambda i: matches(i.instance_id)
        if name.startswith("tag:"):
            key = name[4:]
            return lambda i: key in self.tags[i.instance_id] and matches(self.tags[i.instance_id][key])
        if name == "tag-key":
            return lambda i: any(matches(k) for k in self.tags[i.instance_id])
        raise ApiError("InvalidParameterValue", f"The filter '{name}' is not supported by the benchmark stand-in")

    def _reservation(self, instance: SimInstance) -> str:
        iid = instance.instance_id
        state = self.state[iid]
        tag_items = "".join(
            f"<item><key>{escape(k)}</key><value>{escape(v)}</value></item>" for k, v in self.tags[iid].items()
        )
        launch = self.fleet.launch.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        host = f"ip-10-0-{instance.index // 250}-{instance.index % 250}"
        return (
            f"<item><reservationId>r-{instance.index:017x}</reservationId><ownerId>123456789012</ownerId>"
            "<groupSet/><instancesSet><item>"
            f"<instanceId>{iid}</instanceId><imageId>ami-0bench</imageId>"
            f"<instanceState><code>{STATE_CODES[state]}</code><name>{state}</name></instanceState>"
            f"<privateDnsName>{host}.ec2.internal</privateDnsName><dnsName/>"
            f"<instanceType>{instance.instance_type}</instanceType><launchTime>{launch}</launchTime>"
            "<placement><availabilityZone>us-east-1a</availabilityZone><tenancy>default</tenancy></placement>"
            "<monitoring><state>disabled</state></monitoring>"
            "<rootDeviceType>ebs</rootDeviceType><rootDeviceName>/dev/xvda</rootDeviceName>"
            "<blockDeviceMapping><item><deviceName>/dev/xvda</deviceName><ebs>"
            f"<volumeId>vol-{instance.index:017x}</volumeId><status>attached</status>"
            f"<attachTime>{launch}</attachTime><deleteOnTermination>true</deleteOnTermination>"
            "</ebs></item></blockDeviceMapping>"
            "<architecture>x86_64</architecture><platformDetails>Linux/UNIX</platformDetails>"
            "<hibernationOptions><configured>false</configured></hibernationOptions>"
            f"<tagSet>{tag_items}</tagSet>"
            "</item></instancesSet></item>"
        )

    def _known(self, ids: list[str]) -> None:
        missing = [i for i in ids if i not in self.by_id]
        if missing:
            raise ApiError("InvalidInstanceID.NotFound", f"The instance IDs '{', '.join(missing)}' do not exist")

    def stop_instances(self, form: dict[str, list[str]]) -> str:
        ids = _members(form, "InstanceId")
        if not ids:
            raise ApiError("MissingParameter", "The request must contain the parameter InstanceId")
        items = []
        with self._lock:
            self._known(ids)
            wrong = [i for i in ids if self.state[i] not in ("running", "stopping", "stopped")]
            if wrong:
                raise ApiError("IncorrectInstanceState", f"The instance '{wrong[0]}' is not in a state to be stopped")
            for iid in ids:
                before = self.state[iid]
                if before == "running":
                    self.stopped.append(iid)
                self.state[iid] = "stopped"
                items.append(
                    f"<item><instanceId>{iid}</instanceId><currentState><code>64</code><name>stopping</name>"
                    f"</currentState><previousState><code>{STATE_CODES[before]}</code><name>{before}</name>"
                    "</previousState></item>"
                )
        return (
            f'<StopInstancesResponse xmlns="{EC2_NS}"><requestId>{uuid.uuid4()}</requestId>'
            f"<instancesSet>{''.join(items)}</instancesSet></StopInstancesResponse>"
        )

    def create_tags(self, form: dict[str, list[str]]) -> str:
        ids = self._tag_resources(form)
        pairs = []
        for n in itertools.count(1):
            key = form.get(f"Tag.{n}.Key")
            if key is None:
                break
            pairs.append((key[0], form.get(f"Tag.{n}.Value", [""])[0]))
        with self._lock:
            for iid in ids:
                self.tags[iid].update(pairs)
        return f'<CreateTagsResponse xmlns="{EC2_NS}"><return>true</return></CreateTagsResponse>'

    def delete_tags(self, form: dict[str, list[str]]) -> str:
        ids = self._tag_resources(form)
        keys = [form[f"Tag.{n}.Key"][0] for n in range(1, 51) if f"Tag.{n}.Key" in form]
        with self._lock:
            for iid in ids:
                for key in keys:
                    self.tags[iid].pop(key, None)
        return f'<DeleteTagsResponse xmlns="{EC2_NS}"><return>true</return></DeleteTagsResponse>'

    def _tag_resources(self, form: dict[str, list[str]]) -> list[str]:
        ids = _members(form, "ResourceId")
        if not ids or len(ids) > MAX_TAG_RESOURCES:
            raise ApiError("InvalidParameterValue", f"{len(ids)} resources: 1 to {MAX_TAG_RESOURCES} per call")
        with self._lock:
            self._known(ids)
        return ids

    # ------------------------------------------------------------------ results
    def stopped_indexes(self) -> set[int]:
        return {self.by_id[i].index for i in self.stopped}


def _members(form: dict[str, list[str]], prefix: str) -> list[str]:
    """The values of a query-protocol list (`Prefix.1`, `Prefix.2`, ...), in order."""
    out: list[str] = []
    for n in itertools.count(1):
        value = form.get(f"{prefix}.{n}")
        if value is None:
            return out
        out.append(value[0])
    return out


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
