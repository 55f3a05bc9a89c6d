"""An SQS queue read and written as a mailbox: the hub's figures queue, where each account's weekly
digest hands over its week, and the click queues the receiver writes to.

A message is deleted only once the reader has kept what it says; one it cannot use stays, and SQS
moves it to the dead-letter queue after the queue's maxReceiveCount, where the operator is alerted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

# Long enough that one run never sees a message twice; a run that dies leaves its messages to the next.
HIDE_SECONDS = 900
BATCH = 10


@dataclass(frozen=True)
class Letter:
    body: str
    receipt: str
    receives: int  # how many times SQS has handed this message out, this time included


class Mailbox:
    def __init__(self, client: Any, url: str) -> None:
        self.client = client
        self.url = url

    def send(self, body: str) -> None:
        self.client.send_message(QueueUrl=self.url, MessageBody=body)

    def letters(self, *, time_left: Callable[[], float], reserve: float, limit: int = 1000) -> Iterator[Letter]:
        """Every message on the queue (up to `limit`), until an empty long poll or too little time left."""
        given = 0
        while given < limit and time_left() > reserve:
            answer = self.client.receive_message(
                QueueUrl=self.url,
                MaxNumberOfMessages=BATCH,
                WaitTimeSeconds=1,  # a long poll asks every SQS server: empty means empty
                VisibilityTimeout=HIDE_SECONDS,
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
            )
            messages = answer.get("Messages", [])
            if not messages:
                return
            for message in messages:
                given += 1
                count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
                yield Letter(message.get("Body", ""), message["ReceiptHandle"], count)

    def delete(self, letter: Letter) -> None:
        self.client.delete_message(QueueUrl=self.url, ReceiptHandle=letter.receipt)

    def delete_all(self, letters: Sequence[Letter]) -> list[Letter]:
        """Delete letters 10 a call (DeleteMessageBatch); the ones SQS did not delete. Those come back once
        their visibility ends and are read again: what a reader keeps must bear reading twice."""
        failed: list[Letter] = []
        for start in range(0, len(letters), BATCH):
            batch = {str(n): letter for n, letter in enumerate(letters[start : start + BATCH])}
            answer = self.client.delete_message_batch(
                QueueUrl=self.url, Entries=[{"Id": n, "ReceiptHandle": x.receipt} for n, x in batch.items()]
            )
            failed += [batch[entry["Id"]] for entry in answer.get("Failed", [])]
        return failed
