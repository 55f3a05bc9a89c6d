"""The deep dive and the hub read what they need once: a type's prices in every region, the kept letters
deleted ten at a time; every request asserted exactly (botocore's Stubber)."""

from __future__ import annotations

import json

import boto3
from botocore.stub import Stubber

from costguard.aws.pricing import PriceBook
from costguard.aws.queues import Letter, Mailbox
from tests.unit.digest.quarterly.test_rules import EVERY_REGION_P4D

QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/costguard-figures"


def product(region: str, price: str) -> str:
    dimension = {"unit": "Hrs", "pricePerUnit": {"USD": price}}
    return json.dumps({"product": {"attributes": {"regionCode": region}},
                       "terms": {"OnDemand": {"x": {"priceDimensions": {"y": dimension}}}}})  # fmt: skip


def test_a_types_prices_in_every_region_are_asked_once_for_all_the_regions_it_ran_in() -> None:
    client = boto3.client("pricing", region_name="us-east-1")
    expected = {"ServiceCode": "AmazonEC2", "Filters": EVERY_REGION_P4D, "MaxResults": 100}
    with Stubber(client) as stub:
        stub.add_client_error("get_products", "ThrottlingException", expected_params=expected)
        stub.add_response("get_products", {"PriceList": [product("us-east-1", "21.96")]}, expected)
        book = PriceBook(client)
        assert book.across_regions("p4d.24xlarge") == {}  # failed: asked again next time, not kept
        assert book.across_regions("p4d.24xlarge") == {"us-east-1": 21.96}
        assert book.across_regions("p4d.24xlarge") == {"us-east-1": 21.96}  # a second region's turn: no call
        stub.assert_no_pending_responses()


def test_letters_are_deleted_ten_a_call_and_those_sqs_kept_are_named() -> None:
    client = boto3.client("sqs", region_name="us-east-1")
    letters = [Letter(f"body {n}", f"receipt-{n}", 1) for n in range(12)]
    with Stubber(client) as stub:
        first = [{"Id": str(n), "ReceiptHandle": f"receipt-{n}"} for n in range(10)]
        stub.add_response(
            "delete_message_batch",
            {"Successful": [{"Id": str(n)} for n in range(10) if n != 4],
             "Failed": [{"Id": "4", "SenderFault": False, "Code": "InternalError"}]},
            {"QueueUrl": QUEUE, "Entries": first},
        )  # fmt: skip
        rest = [{"Id": str(n), "ReceiptHandle": f"receipt-{n + 10}"} for n in range(2)]
        stub.add_response(
            "delete_message_batch", {"Successful": [{"Id": "0"}, {"Id": "1"}], "Failed": []},
            {"QueueUrl": QUEUE, "Entries": rest},
        )  # fmt: skip
        assert Mailbox(client, QUEUE).delete_all(letters) == [letters[4]]
        stub.assert_no_pending_responses()
