"""An SQS queue's names: the ARN a stack output gives, the URL SQS is called with, and its region. Pure."""

from __future__ import annotations


def sqs_queue_url(arn: str) -> str:
    """arn:aws:sqs:<region>:<account>:<name> -> https://sqs.<region>.amazonaws.com/<account>/<name>."""
    _, partition, _, region, account, name = arn.split(":", 5)
    suffix = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
    return f"https://sqs.{region}.{suffix}/{account}/{name}"


def sqs_queue_region(url: str) -> str:
    """The region of a queue URL (https://sqs.<region>.amazonaws.com/...); "" for another form."""
    host = url.split("//", 1)[-1].split("/", 1)[0].split(".")
    return host[1] if len(host) > 2 and host[0] == "sqs" else ""
