"""SQS for the digests: one queue (the hub's figures queue, or the queue a member hands its week to) with
SendMessage, ReceiveMessage, DeleteMessage and DeleteMessageBatch in the JSON protocol's shape; at least
as strict as SQS about what costguard sends: a body of 1 byte to 256 KiB, 1 to 10 messages a receive, a
long poll of at most 20 seconds (an empty queue waits it, as a long poll does), a visibility timeout of
at most 12 hours, batches of 1 to 10 entries with distinct ids, a receipt handle it never gave refused.
A message received stays hidden for longer than any run (its visibility timeout is not timed)."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from testing.aws.errors import ApiError

BATCH = 10
MAX_BODY = 262_144
MAX_WAIT_S = 20
MAX_VISIBILITY_S = 43_200


@dataclass
class Message:
    body: str
    message_id: str
    receives: int = 0
    receipt: str = ""
    hidden: bool = False


def _invalid(message: str) -> ApiError:
    return ApiError("InvalidParameterValue", message)


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # SQS's own checksum


class Sqs:
    def __init__(self) -> None:
        self.messages: list[Message] = []  # on the queue: not yet deleted
        self.sent: list[str] = []  # SendMessage's bodies, in order
        self.deleted: list[str] = []
        self._lock = threading.Lock()

    def put(self, body: str) -> None:
        """A message already on the queue when the run begins."""
        with self._lock:
            self.messages.append(Message(body, str(uuid.uuid4())))

    @staticmethod
    def _queue(params: Mapping[str, Any]) -> None:
        if not params.get("QueueUrl"):
            raise ApiError("MissingParameter", "The request must contain the parameter QueueUrl.")

    def send_message(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._queue(params)
        text = str(params.get("MessageBody") or "")
        if not 1 <= len(text.encode()) <= MAX_BODY:
            raise _invalid(f"a message body of {len(text.encode())} bytes: 1 to {MAX_BODY}")
        message = Message(text, str(uuid.uuid4()))
        with self._lock:
            self.sent.append(text)
            self.messages.append(message)
        return {"MessageId": message.message_id, "MD5OfMessageBody": _md5(text)}

    def receive_message(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._queue(params)
        wanted = int(params.get("MaxNumberOfMessages", 1))
        wait = float(params.get("WaitTimeSeconds", 0))
        visibility = int(params.get("VisibilityTimeout", 30))
        if not 1 <= wanted <= BATCH:
            raise _invalid(f"MaxNumberOfMessages {wanted}: 1 to {BATCH}")
        if not 0 <= wait <= MAX_WAIT_S:
            raise _invalid(f"WaitTimeSeconds {wait}: 0 to {MAX_WAIT_S}")
        if not 0 <= visibility <= MAX_VISIBILITY_S:
            raise _invalid(f"VisibilityTimeout {visibility}: 0 to {MAX_VISIBILITY_S}")
        with self._lock:
            given = [m for m in self.messages if not m.hidden][:wanted]
            for m in given:
                m.hidden, m.receives, m.receipt = True, m.receives + 1, uuid.uuid4().hex
        if not given:
            time.sleep(wait)  # a long poll of an empty queue
            return {}
        return {
            "Messages": [
                {
                    "MessageId": m.message_id,
                    "ReceiptHandle": m.receipt,
                    "MD5OfBody": _md5(m.body),
                    "Body": m.body,
                    "Attributes": {"ApproximateReceiveCount": str(m.receives)},
                }
                for m in given
            ]
        }

    def _delete(self, receipt: str) -> bool:
        with self._lock:
            found = next((m for m in self.messages if receipt and m.receipt == receipt), None)
            if found is None:
                return False
            self.messages.remove(found)
            self.deleted.append(found.body)
            return True

    def delete_message(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._queue(params)
        if not self._delete(str(params.get("ReceiptHandle") or "")):
            raise ApiError("ReceiptHandleIsInvalid", "The input receipt handle is invalid")
        return {}

    def delete_message_batch(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._queue(params)
        entries = list(params.get("Entries") or [])
        if not entries:
            raise ApiError("EmptyBatchRequest", "There should be at least one DeleteMessageBatchRequestEntry")
        if len(entries) > BATCH:
            raise ApiError("TooManyEntriesInBatchRequest", f"{len(entries)} entries: at most {BATCH}")
        if len({e["Id"] for e in entries}) < len(entries):
            raise ApiError("BatchEntryIdsNotDistinct", "Two or more batch entries have the same Id")
        done = [e for e in entries if self._delete(str(e.get("ReceiptHandle") or ""))]
        return {
            "Successful": [{"Id": e["Id"]} for e in done],
            "Failed": [
                {"Id": e["Id"], "SenderFault": True, "Code": "ReceiptHandleIsInvalid", "Message": "invalid"}
                for e in entries
                if e not in done
            ],
        }
